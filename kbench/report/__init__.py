"""Reports people read: tables, PNG charts and a static HTML page over evaluation runs
(`build.build_report`), and KoLA standardised scores across runs (`standardize`)."""
