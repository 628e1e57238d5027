package searchcrawl.solr;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.solr.cloud.MiniSolrCloudCluster;
import org.apache.solr.common.util.Utils;
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
 *
 * <p>{@code DevSolr --home DIR --port PORT --cloud [--nodes 2]} starts a local SolrCloud instead
 * (MiniSolrCloudCluster: embedded ZooKeeper plus N nodes on ports PORT, PORT+1, ...), with no
 * collection: creating one is the Collections API's job (searchcrawl/solrcloud.py), as in
 * production. See {@link #runCloud}.
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

  private static final String USAGE =
      "usage: DevSolr --home SOLR_HOME [--port PORT] [--cloud [--nodes N]]";

  private DevSolr() {}

  public static void main(String[] args) throws Exception {
    String home = null;
    int port = 8983;
    boolean cloud = false;
    int nodes = 2;
    boolean nodesGiven = false;
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
          cloud = true;
          break;
        case "--nodes":
          try {
            nodes = Integer.parseInt(value(args, ++i));
          } catch (NumberFormatException e) {
            die("--nodes needs a number");
          }
          if (nodes < 1) {
            die("--nodes must be at least 1");
          }
          nodesGiven = true;
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
    if (nodesGiven && !cloud) {
      die("--nodes needs --cloud");
    }
    Path homeDir = Paths.get(home).toAbsolutePath().normalize();
    if (!cloud && !Files.isRegularFile(homeDir.resolve("solr.xml"))) {
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
    if (cloud) {
      runCloud(homeDir, port, nodes, log);
      return;
    }
    // stopAtShutdown(false): our own hook stops it (onShutdown)
    JettyConfig config =
        JettyConfig.builder().setPort(port).setContext("/solr").stopAtShutdown(false).build();
    JettySolrRunner runner = new JettySolrRunner(homeDir.toString(), config);
    CountDownLatch stopped =
        onShutdown(
            log,
            () -> {
              if (runner.isRunning()) {
                log.info("DevSolr stopping");
                runner.stop();
                log.info("DevSolr stopped");
              }
            });

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

  /**
   * SolrCloud mode: ZooKeeper (random port) and {@code nodes} Solr nodes on fixed ports {@code
   * port + i}, so that devsolr.py knows their URLs. Node i lives in {@code home/node<i>}, ZooKeeper
   * in {@code home/zookeeper}; home must not hold a previous cluster (devsolr.py empties it: a
   * local cloud starts afresh every time). No authentication: unlike standalone mode, security.json
   * is not supported here.
   *
   * <p>When every node is live, {@code <run dir>/cloud.json} (the run dir is home's parent) lists
   * the node URLs, the ZooKeeper address and each node's state ("up"/"down"). Tests stop and
   * restart single nodes without restarting the JVM by creating {@code <run dir>/control/stop-<i>}
   * or {@code start-<i>}: the file is polled for, acted on, deleted, and cloud.json updated.
   */
  private static void runCloud(Path homeDir, int port, int nodeCount, Logger log) throws Exception {
    Path runDir = homeDir.getParent();
    Path stateFile = runDir.resolve("cloud.json");
    Path controlDir = runDir.resolve("control");
    Files.createDirectories(homeDir);
    Files.createDirectories(controlDir);
    Files.deleteIfExists(stateFile);

    Object lock = new Object(); // node starts/stops (control thread) vs. shutdown hook
    MiniSolrCloudCluster[] holder = new MiniSolrCloudCluster[1];
    JettySolrRunner[] nodes = new JettySolrRunner[nodeCount];
    CountDownLatch stopped =
        onShutdown(
            log,
            () -> {
              synchronized (lock) {
                if (holder[0] != null) {
                  log.info("DevSolr stopping the SolrCloud cluster");
                  MiniSolrCloudCluster cluster = holder[0];
                  holder[0] = null;
                  cluster.shutdown();
                  log.info("DevSolr stopped");
                }
              }
            });

    long t0 = System.nanoTime();
    try {
      synchronized (lock) {
        // No nodes from the constructor: it would give them all the same JettyConfig (one port).
        JettyConfig defaults = jettyConfig(0);
        MiniSolrCloudCluster cluster =
            new MiniSolrCloudCluster(
                0, homeDir, MiniSolrCloudCluster.DEFAULT_CLOUD_SOLR_XML, defaults);
        holder[0] = cluster;
        for (int i = 0; i < nodeCount; i++) {
          nodes[i] = cluster.startJettySolrRunner("node" + i, "/solr", jettyConfig(port + i));
        }
        cluster.waitForAllNodes(120);
        writeState(stateFile, cluster, port, nodes);
      }
    } catch (Exception e) {
      log.error("DevSolr failed to start SolrCloud on 127.0.0.1:{}..{}", port, port + nodeCount - 1, e);
      log.error("DevSolr: giving up (SolrCloud in {}): {}", homeDir, describe(e));
      System.exit(1);
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    log.info(
        "DevSolr SolrCloud ready: {} nodes at http://127.0.0.1:{}/solr ... ZooKeeper {} (home {},"
            + " started in {} ms)",
        nodeCount,
        port,
        holder[0].getZkServer().getZkAddress(),
        homeDir,
        ms);

    Thread control =
        new Thread(
            () -> {
              while (stopped.getCount() > 0) {
                try {
                  obeyControlFiles(controlDir, stateFile, lock, holder, port, nodes, log);
                  Thread.sleep(200);
                } catch (InterruptedException e) {
                  return;
                } catch (Exception e) {
                  log.error("DevSolr: control request failed", e);
                }
              }
            },
            "devsolr-control");
    control.setDaemon(true);
    control.start();
    stopped.await();
  }

  private static final Pattern CONTROL_FILE = Pattern.compile("(stop|start)-(\\d+)");

  /** Acts on control/stop-<i> and control/start-<i>; unknown or invalid files are removed. */
  private static void obeyControlFiles(
      Path controlDir,
      Path stateFile,
      Object lock,
      MiniSolrCloudCluster[] holder,
      int port,
      JettySolrRunner[] nodes,
      Logger log)
      throws Exception {
    List<Path> requests = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(controlDir)) {
      files.forEach(requests::add);
    } catch (IOException e) {
      return; // the run dir is being removed
    }
    for (Path request : requests) {
      Matcher m = CONTROL_FILE.matcher(request.getFileName().toString());
      synchronized (lock) {
        MiniSolrCloudCluster cluster = holder[0];
        if (cluster == null) {
          return; // shutting down
        }
        if (!m.matches() || Integer.parseInt(m.group(2)) >= nodes.length) {
          log.warn("DevSolr: ignoring control file {}", request.getFileName());
        } else {
          int index = Integer.parseInt(m.group(2));
          JettySolrRunner node = nodes[index];
          try {
            if (m.group(1).equals("stop") && node.isRunning()) {
              log.info("DevSolr stopping node {} (port {})", index, port + index);
              cluster.stopJettySolrRunner(node);
              cluster.waitForJettyToStop(node);
            } else if (m.group(1).equals("start") && !node.isRunning()) {
              log.info("DevSolr starting node {} (port {})", index, port + index);
              cluster.startJettySolrRunner(node); // same port: it is in the node's JettyConfig
              cluster.waitForNode(node, 120);
            }
          } catch (Exception e) {
            // Reported through cloud.json: the node's state is not the one asked for.
            log.error("DevSolr: could not {} node {}", m.group(1), index, e);
          }
          writeState(stateFile, cluster, port, nodes);
        }
        Files.deleteIfExists(request); // after cloud.json: its absence means "done"
      }
    }
  }

  private static JettyConfig jettyConfig(int port) {
    // stopAtShutdown(false): our shutdown hook stops the cluster (ZooKeeper last).
    return JettyConfig.builder().setPort(port).setContext("/solr").stopAtShutdown(false).build();
  }

  /** cloud.json, replaced atomically so that readers never see half of it. */
  private static void writeState(
      Path stateFile, MiniSolrCloudCluster cluster, int port, JettySolrRunner[] nodes)
      throws IOException {
    List<String> urls = new ArrayList<>();
    List<String> states = new ArrayList<>();
    for (int i = 0; i < nodes.length; i++) {
      urls.add("http://127.0.0.1:" + (port + i) + "/solr");
      states.add(nodes[i].isRunning() ? "up" : "down");
    }
    Map<String, Object> state = new LinkedHashMap<>();
    state.put("nodes", urls);
    state.put("states", states);
    state.put("zk", cluster.getZkServer().getZkAddress());
    state.put("pid", ProcessHandle.current().pid());
    Path tmp = stateFile.resolveSibling(stateFile.getFileName() + ".tmp");
    Files.write(tmp, Utils.toJSONString(state).getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, stateFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** What stops Solr; it may throw (the error is logged). */
  @FunctionalInterface
  private interface Stopper {
    void stop() throws Exception;
  }

  /**
   * Our own shutdown hook (SIGTERM, Ctrl-C) instead of Jetty's stopAtShutdown: one stopper, in a
   * known order (Solr, then logging flushed), rather than two racing hooks. The returned latch
   * opens once it has run; main parks on it.
   */
  private static CountDownLatch onShutdown(Logger log, Stopper stopper) {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    stopper.stop();
                  } catch (Exception e) {
                    log.error("DevSolr: error while stopping", e);
                  } finally {
                    stopped.countDown();
                    org.apache.logging.log4j.LogManager.shutdown();
                  }
                },
                "devsolr-shutdown"));
    return stopped;
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
