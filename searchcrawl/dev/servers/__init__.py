"""The real servers the tests run and `scrapy dev <kind>` starts for a new user (issue 92): each on
127.0.0.1, in a folder of its own, stopped with all it wrote. One implementation: tests/*_server.py
hold only their pytest fixtures (one server a test worker), searchcrawl/dev/examples.py the items
an example puts in."""
