"""The workshop board: a room's per-record policies side by side, in a shared database.

* :mod:`.store` — the database (SQLAlchemy Core; SQLite by default, any server URL): boards,
  entries, the facilitator's settings, schema version and migrations, who may do what;
* :mod:`.summary` — the board row of a study config, computed with prdp_core on a dataset:
  public quantities (the policy function, budgets, analytic σ) apart from statistics of the
  records (loss quantiles, share above the base loss, owner losses, errors);
* :mod:`.export` — the board as a formula-safe CSV and one self-contained HTML report;
* :mod:`.links` — a policy as a compact, size-capped URL parameter, read back with the
  study import's validation;
* :mod:`.workshop` — the server's workshop folder, data folder, board URL and facilitator key.

Nothing here imports streamlit; the app's Board page and the ``prdp board`` commands use it.
"""

from __future__ import annotations
