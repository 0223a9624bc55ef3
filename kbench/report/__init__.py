"""Reports people read, from the results envelope of evaluation runs: the static HTML report with
charts and an item explorer per run (`build.build_report`), models compared on their shared items
(`compare`), the KEE technique comparison (`kee`) and KoLA standardised scores (`standardize`)."""
