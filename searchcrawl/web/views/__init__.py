"""The web application's views: HTTP in, HTTP out, one module a topic, named
``<topic>_views.py``. Their logic, without HTTP, is ``web/<topic>.py`` or ``web/<topic>/`` beside
this folder where the web application owns it, or the lower package each module's docstring
names (search/, ops/, store/); tests/web/test_views_shape.py holds the rule."""
