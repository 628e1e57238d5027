"""The web application of searchcrawl (`scrapy web`): search and administration pages."""
