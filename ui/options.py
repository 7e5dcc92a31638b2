"""Fixed option lists of page widgets, shared by the pages and by the Study import's checks
(the ``rules`` of the pages' ``STATE`` declarations, gathered in ``ui.study.SETTING_RULES``), so an
imported setting is checked against what the widget offers."""

from __future__ import annotations

#: Policy designer
OWNER_BOUNDS = ("lemma4", "lemma5")
POLICY_VIEWS = ("zoom", "cdf", "tail")
DELTAS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)

#: Trade-offs
SWEEP_PCTS = (50.0, 80.0, 90.0, 95.0, 97.0, 99.0, 99.5, 99.9)
SWEEP_RHOS = (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
FIT_TARGETS = (0.01, 0.05, 0.1, 0.2)
CLIP_ALPHAS = (1.1, 1.2, 1.5, 2.0, 3.0)
CLIP_RHOS = (0.01, 0.1, 1.0, 10.0)

#: Budget functions (scaling view)
SCALE_VARY = ("n", "U", "sigma")
