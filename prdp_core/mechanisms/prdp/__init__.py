"""The general PrDP framework (per-record DP with budget functions): central and local mechanisms, forecast.

Paper: "Per-record differential privacy: a general framework" — every record r has a budget
E(r), a pure-ε bound on what adding or removing r may change (E-PrDP, Def. 3.7). The package
re-exports the public names of its modules, one concept each:

* the policy: :mod:`.budget` (:class:`BudgetFunction`, E(r), presets and constructors),
  :mod:`.shapes` (the raw formulas), :mod:`.expressions` (the whitelist compiler of budget
  expressions) and :mod:`.domains` (privacy-specified domains, Sec. 5.1);
* the central model: :mod:`.central` (Algorithm 1 :func:`count`, Algorithm 2 :func:`framework`,
  the naive baseline), :mod:`.selection` (Algorithm 1's selection rule), :mod:`.answers` (the
  standard mechanisms M), :mod:`.queries` (queries and their per-domain statistics),
  :mod:`.extension` (the Sec. 5.2 sum extension) and :mod:`.experiments` (Table 3, Figs. 3–5);
* the local model (PrLDP, Algorithms 3–5): :mod:`.local`, *not* re-exported because its
  functions share the central ones' names (``count``, ``framework``, ``naive``, ``simulate``):
  use ``from prdp_core.mechanisms.prdp import local as prldp``;
* the failure forecast before a run: :mod:`.assumed` (the assumed distribution and the
  records per domain), :mod:`.error_law`, :mod:`.forecast` (:func:`forecast`) and
  :mod:`.remedies` (:func:`outlook`).
"""

from __future__ import annotations

from ...core.domains import DomainPartition, ceil_log2
from ...core.expressions import (
    ALLOWED_FUNCTIONS,
    COST_POWER,
    COST_TEXT_COMPARISON,
    MAX_CONSTANT_EXPONENT,
    MAX_EXPRESSION_DEPTH,
    MAX_EXPRESSION_NODES,
    Columns,
    CompiledExpression,
    Evaluator,
    compile_expression,
)
from ...core.shapes import Constant, Expression, Groups, Inverse, Log, Shape, Sqrt, Step
from .answers import BUILTIN, AdaptiveClippedSum, DistinctCount, LaplaceCount, RankMax
from .assumed import AssumedData, RecordModel
from .budget import (
    DEFAULT_EPS_MAX,
    DEFAULT_U,
    PRESETS,
    BudgetFunction,
    budget_from_dict,
    constant,
    inverse,
    log_budget,
    parse_budget,
    per_group,
    preset,
    sqrt_budget,
    step_table,
    value_grid,
)
from .central import PAPER_SHARE, Split, check_share, count, count_of, framework, framework_trials, naive, naive_trials
from .error_law import FAILURE_LEVEL, ErrorLaw
from .experiments import PAPER_BUDGETS, SCALING_DEFAULTS, Method, normal_balances, scaling_study, simulate, trimmed_mean
from .extension import ExtensionStats, extension_stats, extension_trials, sum_extension
from .forecast import WARN_AT, Forecast, ForecastQuery, Model, forecast
from .queries import CustomMechanism, FrameworkQuery, Prepared, QueryKind, as_query, prepare
from .remedies import BUDGET_FACTORS, CAP_HALVINGS, CAUSES, SPLITS, Outlook, Remedy, outlook
from .selection import Selection, secure_select_domain, select_domain

__all__ = [
    "MAX_EXPRESSION_NODES", "MAX_EXPRESSION_DEPTH", "MAX_CONSTANT_EXPONENT", "COST_POWER", "COST_TEXT_COMPARISON",
    "Columns", "Evaluator", "ALLOWED_FUNCTIONS", "CompiledExpression", "compile_expression", "Shape", "Constant",
    "Inverse", "Sqrt", "Log", "Step", "Expression", "Groups", "ceil_log2", "DomainPartition", "DEFAULT_EPS_MAX",
    "DEFAULT_U", "value_grid", "BudgetFunction", "budget_from_dict", "parse_budget", "constant", "inverse",
    "log_budget", "sqrt_budget", "step_table", "per_group", "PRESETS", "preset", "secure_select_domain", "Selection",
    "select_domain", "AdaptiveClippedSum", "RankMax", "LaplaceCount", "DistinctCount", "BUILTIN", "QueryKind",
    "CustomMechanism", "FrameworkQuery", "as_query", "Prepared", "prepare", "count", "count_of", "PAPER_SHARE",
    "check_share",
    "Split", "framework_trials", "framework", "naive_trials", "naive", "ExtensionStats", "extension_stats",
    "extension_trials", "sum_extension", "Method", "trimmed_mean", "simulate", "PAPER_BUDGETS", "SCALING_DEFAULTS",
    "normal_balances", "scaling_study", "AssumedData", "RecordModel", "FAILURE_LEVEL", "ErrorLaw", "Model",
    "ForecastQuery", "WARN_AT", "Forecast", "forecast", "SPLITS", "CAP_HALVINGS", "BUDGET_FACTORS", "CAUSES",
    "Remedy", "Outlook", "outlook",
]
