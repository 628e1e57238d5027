"""Source spiders. Every source file becomes a subclass of SourceSpider (see spiderloader)."""
