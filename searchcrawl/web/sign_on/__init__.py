"""Signing in (issue 79): the searchers' and administrators' sessions, who is searching
behind a trusted proxy, and single sign-on with OpenID Connect, SAML 2.0 and Kerberos, without
HTTP routing (views/sign_on_views.py routes them)."""
