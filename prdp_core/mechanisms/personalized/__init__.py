"""Personalized differential privacy (PDP): every user publicly chooses an ε.

Jorgensen, Yu and Cormode, "Conservative or Liberal? Personalized Differential Privacy"
(ICDE 2015). A *privacy specification* Φ : U → ℝ⁺ (Def. 5) gives each user u of a
public universe U its own ε, Φ^u (smaller = stronger privacy). A mechanism M is
**Φ-PDP** (Def. 6) when, for neighbouring datasets D ∼ D′ that differ in one tuple x
owned by user u, Pr[M(D) ∈ O] ≤ exp(Φ^u) · Pr[M(D′) ∈ O] (in both directions).

Minimum, Threshold, Sample and Stretching are proved under **add/remove** neighbours; PE only
under **substitution** neighbours; a specification whose roster was read from the table is
stated under substitution neighbours for every mechanism. The guarantee is per **tuple**: a
user owning k tuples is protected at about k·Φ^u (group privacy).

One concept per module (this package re-exports their public names):

* :mod:`.spec` — privacy specifications :class:`PrivacySpec`, generated tiers, rosters;
* :mod:`.query` — :class:`PersonalizedQuery`, what is asked of the data;
* :mod:`.ranges` — the public output range of median and min, cut into pieces;
* :mod:`.blackbox` — the ε-DP black boxes wrapped by Minimum, Threshold and Sample, and a
  caller-supplied :class:`BlackBox`;
* :mod:`.sample` — Sample's keep probabilities and delivered ε (Def. 9, Thm 5);
* :mod:`.neighbours` — neighbour notions, and losses under substitution neighbours;
* :mod:`.pe` — the personalized exponential mechanism's score and output law (Def. 10);
* :mod:`.mechanisms` — :class:`Minimum`, :class:`Threshold`, :class:`Sample`, :class:`PE`,
  :class:`Stretching` (Sec. IV);
* :mod:`.release` — ledger-ready releases with per-user delivered ε;
* :mod:`.secure` — the secure (publishable) path of every mechanism: exact OpenDP samplers, grid
  outputs, each user's loss certified;
* :mod:`.accuracy` — closed-form and exact-pmf errors, simulations, design tables;
* :mod:`.experiments` — the paper's synthetic experiments (Sec. V-A, Table I);
* :mod:`.reduction` — the PDP → PrDP reduction E(r) = c·v_bud of the general framework paper
  (Sec. 3.4).
"""

from __future__ import annotations

from .accuracy import (
    PE_EXAMPLE,
    compare,
    count_mse_proxy,
    delivered_by_mechanism,
    delivered_table,
    evaluate,
    exact_mse,
    example1_errors,
    linear_moments,
    neighbour_table,
    pe_profile,
    pi_curves,
    simulate_answers,
    sum_mse_proxy,
    threshold_curve,
)
from .blackbox import (
    BlackBox,
    BlackBoxFn,
    CountNoise,
    dp_answer,
    dp_count,
    dp_mean,
    dp_quantile_em,
    dp_sum,
    em_pieces,
    median_scores,
    min_scores,
    noise_variance,
)
from .defaults import CUTOFF_DEFAULT, CUTOFF_SMALL, DESIGN_DEFAULTS, DesignDefault, nice_ceil
from .experiments import ExperimentConfig, paper_experiment
from .mechanisms import PE, Answer, Minimum, PDPMechanism, Sample, Stretching, Threshold, paper_mechanisms
from .neighbours import (
    NEIGHBOUR_TEXT,
    Neighbours,
    noise_calibration,
    sample_delivered_substitution,
    substitution_factor,
)
from .pe import (
    d_count,
    d_median,
    d_median_pieces,
    d_min,
    d_min_pieces,
    k_smallest_prefix_sums,
    pe_distribution,
    pe_draw,
)
from .query import MEDIAN_SCORES, QUERY_KINDS, PersonalizedQuery, QueryKind
from .ranges import Pieces, expand_pieces
from .reduction import (
    BUDGET_COLUMN,
    PAPER_CHOICE_RANGE,
    PrdpReduction,
    compare_with_prdp,
    prdp_available,
    public_choice_range,
    run_prdp,
    to_prdp,
)
from .release import (
    DATA_DEFAULT_NOTE,
    DESIGN_DEFAULT_PARAMS,
    PersonalizedPlan,
    flag_design_defaults,
    release,
    require_public_bounds,
)
from .sample import sample_delivered, sample_probability
from .secure import (
    SecureResult,
    black_box_scores,
    output_grid,
    pe_scores,
    pe_weights,
    sample_keep_numerators,
    secure_answer,
    secure_count,
    secure_mean,
    secure_pe,
    secure_quantile,
    secure_sample_keep,
    secure_stretching,
    secure_sum,
)
from .spec import (
    ROSTER_TEXT,
    ROSTERS,
    TIER_NAMES,
    PrivacySpec,
    Roster,
    ThresholdSpec,
    TierConfig,
    generate_tiers,
    generate_tiers_for,
    spec_from_column,
    spec_from_labels,
    spec_from_values,
)

__all__ = [
    "generate_tiers", "generate_tiers_for", "PrivacySpec", "Roster", "ROSTER_TEXT", "ROSTERS",
    "spec_from_column", "spec_from_labels", "spec_from_values", "ThresholdSpec", "TIER_NAMES", "TierConfig",
    "expand_pieces", "Pieces", "BlackBox", "BlackBoxFn", "CountNoise", "dp_answer", "dp_count", "dp_mean",
    "dp_quantile_em", "dp_sum", "em_pieces", "median_scores", "min_scores", "noise_variance", "MEDIAN_SCORES",
    "PersonalizedQuery", "QUERY_KINDS", "QueryKind", "sample_delivered", "sample_probability", "NEIGHBOUR_TEXT",
    "Neighbours", "noise_calibration", "sample_delivered_substitution", "substitution_factor", "d_count",
    "d_median", "d_median_pieces", "d_min", "d_min_pieces", "k_smallest_prefix_sums", "pe_distribution",
    "pe_draw", "Answer", "Minimum", "paper_mechanisms", "PDPMechanism", "PE", "Sample", "Stretching",
    "Threshold", "DATA_DEFAULT_NOTE", "DESIGN_DEFAULT_PARAMS", "flag_design_defaults", "release",
    "CUTOFF_DEFAULT", "CUTOFF_SMALL", "DESIGN_DEFAULTS", "DesignDefault", "nice_ceil",
    "require_public_bounds", "PersonalizedPlan", "compare",
    "count_mse_proxy", "delivered_by_mechanism", "delivered_table", "evaluate", "exact_mse", "example1_errors",
    "linear_moments", "neighbour_table", "PE_EXAMPLE", "pe_profile", "pi_curves", "simulate_answers",
    "sum_mse_proxy", "threshold_curve", "ExperimentConfig", "paper_experiment", "BUDGET_COLUMN",
    "compare_with_prdp", "PAPER_CHOICE_RANGE", "prdp_available", "PrdpReduction", "public_choice_range",
    "run_prdp", "to_prdp", "SecureResult", "black_box_scores", "output_grid", "pe_scores", "pe_weights",
    "sample_keep_numerators", "secure_answer", "secure_count", "secure_mean", "secure_pe", "secure_quantile",
    "secure_sample_keep", "secure_stretching", "secure_sum",
]
