"""searchcrawl's scrapy commands (COMMANDS_MODULE): crawl, solr, search, demo."""
