"""Multi-tier release: one query, several analysts with different budgets, bounded total loss.

Wang et al., "Multi-tier Differential Private Query Release" (arXiv:2606.15543). Analysts
("tiers") ask the *same* query with budgets ε_1 > ε_2 > … > ε_m (the public ε = 0.5,
trusted researchers ε = 2, the agency ε = 8). Releasing independently costs Σ ε_i if they
collude; splitting the budget ("gradual") keeps the total at ε_1 but wastes accuracy. The
multi-tier mechanisms give every tier (nearly) the accuracy of a single release at its
budget while any coalition of tiers learns no more than its highest budget (Def. 3.1/3.2,
Thm 4.1): every lower tier is a data-independent post-processing of a higher one.

The package re-exports the public names of its modules, one concept each:

* :mod:`.tiers` — :func:`tiers_from` validates a tier list (name, ε);
* :mod:`.queries` — query helpers for tables: :class:`RecordFilter`, :func:`central_query`; for
  the local model :func:`local_categories` (every user reports; public bin edges from
  :func:`bin_edges` or a declared list; records outside the filter report the public category
  :data:`NOT_MATCHING`);
* central model (§4): :mod:`.central` — :func:`plan_central` → :class:`CentralPlan` (per-tier MSE
  of the multi-tier, independent and gradual releases, residual validity of every step) and
  :func:`release_central` (Algorithm 1, or a baseline) → :class:`~prdp_core.core.release.Release`;
  :mod:`.noise_families` (geometric, multi-scale geometric, Laplace, Gaussian, and the families
  kept for the check) and :mod:`.residuals` (:func:`check_residual`: does a residual
  distribution exist, Table 1, App. F);
* local model (§5): :mod:`.local` — :func:`plan_local` → :class:`LocalPlan` (template chain, the
  template serving each tier, unused budget, per-tier MSE against the ideal, GRR, BRR and
  gradual) and :func:`release_local` → Release; :mod:`.subset` (the Subset mechanism, its
  operators, exact enumeration), :mod:`.templates` (the template chain) and :mod:`.simulation`
  (exact simulation of n users);
* :mod:`.secure` — the secure (publishable) path of both models: :func:`secure_central` (OpenDP's discrete
  Laplace and Gaussian on a grid, the residual chain with certified per-tier losses) and the
  :class:`SecureGenerator` of exact coins that drives the local simulation;
* :mod:`.coalitions` — :func:`coalition_loss`, the privacy loss of any set of colluding tiers,
  *computed* (exact joint distributions where they fit in memory, otherwise the Markov-chain
  factorisation of the construction), next to the independent and gradual baselines.

Budgets are pure ε (ε-DP under add/remove neighbours in the central model; ε-LDP in the
local model), except the Gaussian family: ε with a shared δ, recorded in the ledger in
zCDP units (ρ = Δ²/(2σ²), exact for Gaussian noise).
"""

from __future__ import annotations

from .central import (
    CentralPlan,
    family_piece_variances,
    gradual_pieces,
    gradual_variance,
    lattice_round,
    plan_central,
    release_central,
    sample_gradual,
    sample_independent,
    sample_multitier,
)
from .coalitions import CoalitionLoss, coalition_loss, coalition_table, geometric_coalition_loss
from .local import LOCAL_MECHANISMS, LocalMechanism, LocalPlan, plan_local, release_local
from .noise_families import (
    CHECK_FAMILIES,
    FAMILY_LABELS,
    MAX_MULTISCALE_SENSITIVITY,
    MAX_SENSITIVITY,
    RELEASE_FAMILIES,
    DiscreteGaussianNoise,
    GaussianNoise,
    GeometricNoise,
    LaplaceNoise,
    MultiscaleGeometricNoise,
    NoiseFamily,
    SkellamNoise,
    StaircaseNoise,
    analytic_gaussian_delta,
    discrete_gaussian_cf,
    gaussian_eps_for,
    gaussian_sigma_for,
    geometric_residual_weights,
    noise_family,
    staircase_cf,
    tsg_pmf,
    tsg_variance,
)
from .queries import (
    BIN_SCALES,
    DEFAULT_TOP,
    NOT_MATCHING,
    CentralQuery,
    RecordFilter,
    bin_edges,
    bin_labels,
    bin_measure,
    central_query,
    local_categories,
)
from .residuals import (
    ResidualCheck,
    bochner_matrix,
    bochner_min_eigenvalue,
    check_residual,
    lattice_residual_pmf,
    residual_ratio,
)
from .secure import (
    SecureGenerator,
    SecureTiers,
    central_units,
    coin_slack,
    mixture_slack,
    secure_central,
    uniform_categories,
)
from .simulation import (
    brr_chain_counts,
    brr_flip_probability,
    debias_brr,
    debias_subset,
    epoch_counts,
    grr_chain_counts,
    iid_subset_counts,
    multitier_subset_counts,
    nested_prefix_counts,
    subset_counts,
)
from .subset import (
    MAX_DOMAIN,
    MAX_EXACT_DOMAIN,
    brr_variance,
    chain_marginals_exact,
    expansion_level,
    expansion_matrix,
    grr_variance,
    joint_exact,
    max_log_ratio,
    optimal_k,
    paper_rescale_parameter,
    rescale_keep_probability,
    rescale_level,
    rescale_matrix,
    subset_gap,
    subset_pmf_exact,
    subset_signal,
    subset_variance,
    subset_variance_tf,
    subsets_of_size,
)
from .templates import (
    VARIANTS,
    Template,
    Variant,
    composite_keep,
    gradual_local_variance,
    serve,
    template_chain,
    utility_bounds,
)
from .tiers import MAX_EPS, MAX_TIERS, MIN_EPS, STRATEGIES, Strategy, Tier, safe_plan_error, tiers_from

__all__ = [
    "MAX_TIERS", "MAX_EPS", "MIN_EPS", "Strategy", "STRATEGIES", "Tier", "tiers_from", "safe_plan_error",
    "RecordFilter", "CentralQuery", "central_query", "DEFAULT_TOP", "NOT_MATCHING", "BIN_SCALES", "bin_edges",
    "bin_labels", "bin_measure", "local_categories", "CentralPlan", "plan_central", "lattice_round",
    "release_central", "sample_multitier", "sample_independent", "gradual_pieces", "gradual_variance",
    "family_piece_variances", "sample_gradual", "RELEASE_FAMILIES", "CHECK_FAMILIES", "FAMILY_LABELS",
    "MAX_MULTISCALE_SENSITIVITY", "tsg_variance", "tsg_pmf", "geometric_residual_weights", "analytic_gaussian_delta",
    "gaussian_sigma_for", "gaussian_eps_for", "staircase_cf", "discrete_gaussian_cf", "NoiseFamily",
    "GeometricNoise", "MultiscaleGeometricNoise", "LaplaceNoise", "GaussianNoise", "DiscreteGaussianNoise",
    "StaircaseNoise", "SkellamNoise", "MAX_SENSITIVITY", "noise_family", "bochner_matrix", "bochner_min_eigenvalue",
    "lattice_residual_pmf", "residual_ratio", "ResidualCheck", "check_residual", "LocalPlan", "plan_local",
    "LocalMechanism", "LOCAL_MECHANISMS", "release_local", "MAX_DOMAIN", "MAX_EXACT_DOMAIN", "subset_signal",
    "subset_gap", "subset_variance", "subset_variance_tf", "optimal_k", "grr_variance", "brr_variance",
    "expansion_level", "rescale_level", "rescale_keep_probability", "paper_rescale_parameter", "subsets_of_size",
    "subset_pmf_exact", "rescale_matrix", "expansion_matrix", "max_log_ratio", "chain_marginals_exact",
    "joint_exact", "Variant", "VARIANTS", "Template", "template_chain", "serve", "composite_keep",
    "gradual_local_variance", "utility_bounds", "epoch_counts", "nested_prefix_counts", "iid_subset_counts",
    "subset_counts", "multitier_subset_counts", "grr_chain_counts", "brr_flip_probability", "brr_chain_counts",
    "debias_subset", "debias_brr", "CoalitionLoss", "coalition_loss", "coalition_table", "geometric_coalition_loss",
    "SecureGenerator", "SecureTiers", "central_units", "coin_slack", "mixture_slack",
    "secure_central", "uniform_categories",
]
