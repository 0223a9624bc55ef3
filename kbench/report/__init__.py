"""Reports people read, from the results envelope of evaluation runs: the static HTML report with
charts and an item explorer per run (`build.build_report`), models compared on their shared items
(`compare`), the KEE technique comparison (`kee`) and KoLA standardised scores (`standardize`)."""

# `kbench.report(runs, out=...)` calls `kbench.api.report`: this package is also that function (see kbench/api.py).
from kbench.api import make_callable  # noqa: E402

make_callable(__name__)
