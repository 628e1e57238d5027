package searchcrawl.solr;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.solr.core.CoreContainer;
import org.apache.solr.embedded.JettyConfig;
import org.apache.solr.embedded.JettySolrRunner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Development Solr for searchcrawl: the real Solr core served over HTTP by JettySolrRunner (from
 * solr-test-framework), because Maven Central has no Solr server distribution. Started and
 * stopped by {@code searchcrawl/devsolr.py}; never used in production.
 *
 * <p>Usage: {@code DevSolr --home SOLR_HOME [--port 8983]}. SOLR_HOME must contain solr.xml and
 * the core directories (core.properties + conf/). JettySolrRunner always binds its connector to
 * 127.0.0.1, so the server is never reachable from other hosts. The context path is /solr.
 * SIGTERM (or Ctrl-C) stops Solr cleanly: cores are closed and committed by the shutdown hook.
 */
public final class DevSolr {

  static {
    // Must run before the first logger is created: use our quiet config (WARN, INFO for us)
    // unless the caller passed -Dlog4j2.configurationFile.
    if (System.getProperty("log4j2.configurationFile") == null
        && System.getProperty("log4j.configurationFile") == null) {
      System.setProperty("log4j2.configurationFile", "searchcrawl-devsolr-log4j2.xml");
    }
  }

  // Held strongly: java.util.logging forgets the level of loggers nobody references.
  private static final java.util.logging.Logger JERSEY_JUL =
      java.util.logging.Logger.getLogger("org.glassfish.jersey");

  private static final String USAGE = "usage: DevSolr --home SOLR_HOME [--port PORT] [--cloud]";

  private DevSolr() {}

  public static void main(String[] args) throws Exception {
    String home = null;
    int port = 8983;
    boolean cloud = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--home":
          home = value(args, ++i);
          break;
        case "--port":
          try {
            port = Integer.parseInt(value(args, ++i));
          } catch (NumberFormatException e) {
            die("--port needs a number");
          }
          break;
        case "--cloud":
          // Reserved: SolrCloud mode (embedded ZooKeeper, collections API) is not built yet.
          cloud = true;
          break;
        case "-h":
        case "--help":
          System.out.println(USAGE);
          return;
        default:
          die("unknown argument: " + args[i]);
      }
    }
    if (home == null) {
      die("--home is required");
    }
    if (cloud) {
      die("--cloud is not implemented yet");
    }
    Path homeDir = Paths.get(home).toAbsolutePath().normalize();
    if (!Files.isRegularFile(homeDir.resolve("solr.xml"))) {
      die("no solr.xml in " + homeDir);
    }

    // What bin/solr would set. solr.install.dir only adds <dir>/lib (absent here) to the shared
    // lib path; without it, and without solr.log.dir, Solr logs a warning/error at every start.
    Path logDir = homeDir.getParent() == null ? homeDir : homeDir.getParent();
    setDefault("solr.install.dir", homeDir.toString());
    setDefault("solr.log.dir", logDir.toString());
    // Jersey (Solr's v2 API) logs a harmless provider warning via java.util.logging at startup.
    JERSEY_JUL.setLevel(java.util.logging.Level.SEVERE);

    Logger log = LoggerFactory.getLogger(DevSolr.class);
    // Our own shutdown hook instead of Jetty's stopAtShutdown: one stopper, in a known order
    // (Solr cores closed, then Jetty, then logging flushed), rather than two racing hooks.
    JettyConfig config =
        JettyConfig.builder().setPort(port).setContext("/solr").stopAtShutdown(false).build();
    JettySolrRunner runner = new JettySolrRunner(homeDir.toString(), config);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    if (runner.isRunning()) {
                      log.info("DevSolr stopping");
                      runner.stop();
                      log.info("DevSolr stopped");
                    }
                  } catch (Exception e) {
                    log.error("DevSolr: error while stopping", e);
                  } finally {
                    stopped.countDown();
                    org.apache.logging.log4j.LogManager.shutdown();
                  }
                },
                "devsolr-shutdown"));

    long t0 = System.nanoTime();
    try {
      runner.start();
    } catch (Exception e) {
      log.error("DevSolr failed to start on 127.0.0.1:{}", port, e);
      System.exit(1);
    }
    CoreContainer cores = runner.getCoreContainer();
    Map<String, CoreContainer.CoreLoadFailure> failures =
        cores == null ? Map.of() : cores.getCoreInitFailures();
    if (cores == null || !failures.isEmpty()) {
      failures.forEach(
          (name, failure) -> log.error("DevSolr: core {} failed to load", name, failure.exception));
      // Last line of the log, the one devsolr.py's error message ends with: the root causes.
      StringBuilder why = new StringBuilder(cores == null ? " no CoreContainer" : "");
      failures.forEach((name, failure) -> why.append(" ").append(describe(failure.exception)));
      log.error("DevSolr: giving up (Solr home {}):{}", homeDir, why);
      System.exit(1);
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    log.info(
        "DevSolr ready at http://127.0.0.1:{}/solr (cores {}, home {}, Solr started in {} ms)",
        runner.getLocalPort(),
        cores.getLoadedCoreNames(),
        homeDir,
        ms);
    stopped.await(); // Jetty threads keep the JVM alive too; this just parks main until stop.
  }

  /** The exception's message, plus its root cause's when the message does not include it. */
  private static String describe(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String message = String.valueOf(t.getMessage());
    String rootMessage = String.valueOf(root.getMessage());
    return root == t || message.contains(rootMessage) ? message : message + ": " + rootMessage;
  }

  private static void setDefault(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }

  private static String value(String[] args, int i) {
    if (i >= args.length) {
      die(args[i - 1] + " needs a value");
    }
    return args[i];
  }

  private static void die(String message) {
    System.err.println("DevSolr: " + message);
    System.err.println(USAGE);
    System.exit(2);
  }
}
