"""The dev Solr launcher's Maven project (pom.xml, src/) as package data.

pyproject.toml maps this folder to the package ``searchcrawl.dev.solr_launcher``, so the wheel
ships it; searchcrawl/dev/solr_runner.py builds it with Maven into a build directory outside
this folder (which may be installed read-only). Maven never reads this file.
"""
