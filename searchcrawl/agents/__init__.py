"""Crawler agents: repositories other than the web (file systems, database tables, mail
archives, and agents of one's own), each listing document references for the crawl. Plain
logic: nothing here knows Scrapy; searchcrawl/crawl/agent_spider.py and
searchcrawl/crawl/handlers/agent.py bring the references into the crawl."""
