"""Reports people read, from the results envelope of evaluation runs: the static HTML report with
charts and an item explorer per run (`build.build_report`), models compared on their shared items
(`compare`) and KoLA standardised scores (`standardize`). This is the frame: each task adds its own
part through its `Task` (`report_section`, `compare_runs`, `report_files`, `standard_name`)."""

# `kbench.report(runs, out=...)` calls `kbench.api.report`: this package is also that function (see kbench/api.py).
from kbench import make_callable  # noqa: E402

make_callable(__name__)
