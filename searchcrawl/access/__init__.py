"""Who may read what: documents' access tokens, searchers' principals, and the decision."""
