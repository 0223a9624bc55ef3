"""Clients for outside systems and source files: downloads, Wikidata SPARQL, pageviews, corpus indexes."""
