"""Today's methods: the statistical disclosure control that establishment tables were published with before
differential privacy, computed on the same table as a per-record policy so that a review can hold one against
the other.

* :mod:`.cells` — the magnitude table of a workload query: its cells and margins, with each cell's
  contributions aggregated per owner (the rules below judge owners — firms — not establishments).
* :mod:`.primary` — primary suppression: the p% rule, the (n, k)-dominance rule and a minimum frequency, with
  the protection level each rule asks of a sensitive cell.
* :mod:`.complementary` — complementary suppression for one- and two-dimensional tables with published margins,
  and the audit that solves, by linear programming, the interval each suppressed cell can be narrowed to.
* :mod:`.noise_infusion` — multiplicative noise infusion at the owner level (Evans, Zayatz and Slanta, 1998), with
  the cells' noise flags as County Business Patterns publishes them.
* :mod:`.compare` — the methods side by side with a DP release of the same cells: per cell, and a summary per
  method of what is published, its error and what each method promises.
* :mod:`.release` — all of it on a study's table as a recorded run that adds no ledger entry (``kind:
  legacy_sdc`` in a study).

None of these methods gives a formal privacy guarantee; docs/legacy_sdc.md says what each protects against.
"""

from .cells import TOTAL, CellTable, cell_table
from .compare import Comparison, compare_methods
from .complementary import MAX_DIMS, Suppression, audit, suppress
from .noise_infusion import FLAGS, NoiseInfusion, infuse
from .primary import Rules, primary_suppression
from .release import MECHANISM, beside, release

__all__ = ["CellTable", "Comparison", "FLAGS", "MAX_DIMS", "MECHANISM", "NoiseInfusion", "Rules", "Suppression",
           "TOTAL", "audit", "beside", "cell_table", "compare_methods", "infuse", "primary_suppression", "release",
           "suppress"]
