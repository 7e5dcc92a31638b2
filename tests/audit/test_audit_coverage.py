"""Every mechanism in prdp_core has an audit test: an inventory, checked against the code.

The inventory names, for every release entry point of ``prdp_core.mechanisms`` (functions
returning a Release, mechanism classes with ``release``/``answer``) and for the noise
components they are built from, the tests that audit its promised per-record loss: exact
output distributions on neighbouring datasets (discrete mechanisms), statistical checks of
the noise at the claimed scale with power against ±10% (continuous ones), and the
StatDP-style neighbouring-dataset search of tests/audit/test_statdp_audit.py.

The test fails when a new mechanism appears without an entry, or when an entry points to a
test (or StatDP case) that does not exist.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

from .test_statdp_audit import CASES

ROOT = Path(__file__).resolve().parents[2]
#: inventory prefix → module of prdp_core.mechanisms, or package: its concept modules are searched, except
#: those listed under a prefix of their own
MODULES = {"unit_splitting": "unit_splitting", "prdp": "prdp", "prldp": "prdp.local", "personalized": "personalized",
           "multitier": "multitier", "granular": "granular", "baselines": "baselines"}

A = "tests/audit/"
U = "tests/unit/"

#: mechanism → audits ("path::test_name" or "statdp:<case>")
INVENTORY: dict[str, list[str]] = {
    # per-record zCDP, unit splitting
    "unit_splitting.release": [
        U + "unit_splitting/test_release.py::test_gaussian_noise_has_promised_sigma_with_power",
        U + "unit_splitting/test_release.py::test_realized_never_exceeds_policy",
        U + "unit_splitting/test_release.py::test_realized_loss_is_exact_for_gaussian_sums",
        A + "test_unit_splitting_loss_audit.py::test_reported_loss_is_the_public_policy_function",
        A + "test_scale_audit.py::test_topcoded_sum_of_a_workload_scale_with_power",
        U + "test_secure.py::test_secure_gaussian_noise_of_a_release_has_the_claimed_sigma_with_power",
        "statdp:unit_splitting.sum", "statdp:unit_splitting.sum.secure", "statdp:unit_splitting.topcoded_sum"],
    "unit_splitting.joint_sum_release": [
        U + "unit_splitting/test_release.py::test_joint_release_sigmas_noise_and_losses",
        U + "test_secure.py::test_secure_joint_sum_release_has_the_claimed_sigmas_with_power",
        "statdp:unit_splitting.joint_sum", "statdp:unit_splitting.joint_sum.isotropic"],
    "unit_splitting.PartitionSelection": [
        U + "unit_splitting/test_release.py::test_partition_selection_keep_probability_matches_formula",
        A + "test_scale_audit.py::test_partition_selection_keep_rate_with_power",
        U + "test_secure.py::test_secure_partition_selection_keeps_with_the_formula",
        "statdp:unit_splitting.partition_selection", "statdp:unit_splitting.partition_selection.alone"],
    # general PrDP framework, central
    "prdp.count": [
        A + "test_prdp_audit.py::test_per_domain_laplace_scales_give_each_record_at_most_its_budget",
        A + "test_prdp_audit.py::test_output_density_ratio_on_neighbours_is_the_domain_budget",
        A + "test_prdp_audit.py::test_count_noise_has_the_claimed_scale_end_to_end_with_power",
        "statdp:prdp.count", "statdp:prdp.count.secure"],
    "prdp.count_of": [
        A + "test_engine_audit.py::test_count_of_draws_the_noise_of_count_and_charges_the_same_losses",
        A + "test_prdp_audit.py::test_per_domain_laplace_scales_give_each_record_at_most_its_budget",
        A + "test_prdp_audit.py::test_count_noise_has_the_claimed_scale_end_to_end_with_power"],
    "prdp.framework": [
        A + "test_prdp_audit.py::test_each_domain_noise_scale_with_power",
        A + "test_scale_audit.py::test_framework_count_and_distinct_answer_noise_scale_with_power",
        A + "test_prdp_split_audit.py::test_part1_counts_have_the_split_scale_with_power",
        A + "test_prdp_split_audit.py::test_m_answer_has_the_rest_of_the_budget_with_power",
        A + "test_prdp_split_audit.py::test_charged_loss_covers_both_parts_and_stays_within_the_budget",
        "statdp:prdp.framework.part1", "statdp:prdp.framework.M.count", "statdp:prdp.framework.M.sum",
        "statdp:prdp.framework.M.max", "statdp:prdp.framework.M.distinct"],
    "prdp.AdaptiveClippedSum": [U + "prdp/test_answers.py::test_clipped_sum_threshold_selection_exact_audit",
                        U + "prdp/test_answers.py::test_clipped_sum_laplace_scale_with_power",
                        "statdp:prdp.framework.M.sum"],
    "prdp.RankMax": [U + "prdp/test_answers.py::test_rank_max_exact_audit_and_sampling", "statdp:prdp.framework.M.max"],
    "prdp.LaplaceCount": [A + "test_scale_audit.py::test_framework_count_and_distinct_answer_noise_scale_with_power",
                       "statdp:prdp.framework.M.count", "statdp:prdp.naive"],
    "prdp.DistinctCount": [A + "test_scale_audit.py::test_framework_count_and_distinct_answer_noise_scale_with_power",
                        "statdp:prdp.framework.M.distinct"],
    "prdp.sum_extension": [A + "test_scale_audit.py::test_sum_extension_noise_per_domain_scale_with_power",
                           "statdp:prdp.sum_extension"],
    "prdp.naive": [A + "test_scale_audit.py::test_prdp_naive_noise_at_the_global_minimum_scale_with_power",
                   U + "prdp/test_answers.py::test_clipped_sum_laplace_scale_with_power", "statdp:prdp.naive"],
    # PrLDP
    "prldp.count": [U + "prdp/test_local.py::test_laplace_sum_is_exactly_a_sum_of_laplace_with_power",
                    "statdp:prldp.count"],
    "prldp.framework": [A + "test_scale_audit.py::test_prldp_round_two_scale_with_power", "statdp:prldp.framework"],
    "prldp.naive": [A + "test_scale_audit.py::test_prldp_naive_scale_with_power", "statdp:prldp.naive"],
    # personalized DP
    "personalized.Minimum": [A + "test_personalized_audit.py::test_minimum_and_threshold_median_respect_the_promise",
                             U + "personalized/test_mechanisms.py::test_laplace_noise_scale_with_power",
                             "statdp:personalized.minimum", "statdp:personalized.minimum.median",
                             U + "personalized/test_secure.py::"
                                 "test_black_box_scores_match_the_seeded_scores_with_sensitivity_one"],
    "personalized.Threshold": [A + "test_personalized_audit.py::test_minimum_and_threshold_median_respect_the_promise",
                               "statdp:personalized.threshold", "statdp:personalized.threshold.below"],
    "personalized.Sample": [A + "test_personalized_audit.py::test_sample_count_delivers_exactly_min_phi_t",
                            A + "test_personalized_audit.py::test_sample_count_exact_on_random_small_datasets",
                            A + "test_personalized_audit.py::test_sample_median_respects_each_users_phi",
                            "statdp:personalized.sample", "statdp:personalized.sample.secure",
                            U + "personalized/test_secure.py::test_dyadic_bernoulli_is_exact_with_power",
                            U + "personalized/test_secure.py::test_sample_keep_probabilities_are_rounded_down",
                            U + "personalized/test_secure.py::test_secure_sample_draw_keeps_with_pi_with_power"],
    "personalized.PE": [A + "test_personalized_audit.py::test_pe_respects_each_users_phi_on_all_neighbour_pairs",
                        U + "personalized/test_pe.py::test_pe_sampler_matches_pmf_with_power",
                        "statdp:personalized.pe.count", "statdp:personalized.pe.median",
                        U + "personalized/test_secure.py::test_select_at_scale_law_with_power_and_its_certified_losses",
                        U + "personalized/test_secure.py::test_secure_pe_scores_weights_and_law"],
    "personalized.Stretching": [A + "test_personalized_audit.py::test_stretching_log_ratio_is_phi_times_value_share",
                                "statdp:personalized.stretching",
                                U + "personalized/test_secure.py::test_secure_stretching_caps_each_users_loss"],
    "personalized.PDPMechanism": [A + "test_personalized_audit.py::"
                                      "test_sample_count_implementation_matches_the_exact_law"],
    "personalized.release": [U + "personalized/test_release.py::test_every_release_delivers_at_most_the_request",
                             A + "test_personalized_audit.py::"
                                 "test_table_roster_substitution_losses_are_exact_upper_bounds",
                             A + "test_personalized_audit.py::test_table_roster_count_laplace_ratio"],
    "personalized.run_prdp": [U + "personalized/test_reduction.py::test_pdp_data_through_the_prdp_framework",
                              "statdp:prdp.framework.part1"],
    # multi-tier
    "multitier.release_central": [A + "test_multitier_audit.py::test_central_full_coalition_costs_the_top_budget",
                                  A + "test_multitier_audit.py::test_central_marginal_of_a_derived_tier_is_exact",
                                  U + "multitier/test_central.py::"
                                      "test_continuous_chain_reproduces_every_tier_with_power",
                                  U + "multitier/test_noise_families.py::test_multiscale_noise_is_eps_dp_exactly",
                                  "statdp:multitier.central.geometric", "statdp:multitier.central.laplace",
                                  "statdp:multitier.central.geometric.secure",
                                  U + "multitier/test_secure.py::"
                                      "test_secure_geometric_chain_reproduces_every_tier_with_power",
                                  U + "multitier/test_secure.py::test_a_broken_residual_fails_the_audit",
                                  U + "multitier/test_secure.py::test_secure_multiscale_chain_matches_its_pmf"],
    "multitier.release_local": [A + "test_multitier_audit.py::test_every_template_and_served_tier_is_exact",
                                A + "test_multitier_audit.py::test_coalitions_of_templates_cost_the_top_level",
                                A + "test_multitier_audit.py::test_grr_and_brr_resampling_chains_are_exact",
                                A + "test_multitier_audit.py::"
                                    "test_released_counts_on_neighbouring_tables_cost_one_users_level",
                                A + "test_multitier_audit.py::test_released_counts_when_one_record_leaves_the_filter",
                                U + "multitier/test_secure.py::test_secure_generator_binomial_is_exact_with_power",
                                U + "multitier/test_secure.py::"
                                    "test_secure_generator_multinomial_and_uniform_draws_with_power"],
    # granular DP
    "granular.heavy_hitter_histogram": [A + "test_granular_audit.py::"
                                            "test_accountant_bounds_every_output_on_random_data",
                                        A + "test_granular_audit.py::test_whole_histogram_exact_and_paper_failure",
                                        A + "test_granular_audit.py::test_engine_outputs_d8_within_accountant",
                                        A + "test_granular_audit.py::test_worst_output_d8_reaches_accountant",
                                        U + "granular/test_histogram.py::"
                                            "test_heavy_hitter_counts_are_laplace_4_over_eps"],
    "granular.standard_histogram": [A + "test_granular_audit.py::test_second_stage_sensitivity_is_two",
                                    U + "granular/test_histogram.py::test_standard_histogram_noise_dense",
                                    "statdp:granular.standard_histogram"],
    "granular.census_2020_illustrative": [
        A + "test_granular_audit.py::test_attribute_subset_accountant_matches_gaussian_histograms"],
    "granular.releases_from_table": [
        A + "test_granular_audit.py::test_attribute_subset_accountant_matches_gaussian_histograms"],
    # private suggestions of public parameters (a DP quantile over a public grid)
    "dp_quantile.dp_quantile": [
        U + "test_dp_quantile.py::test_exact_law_on_neighbouring_datasets_is_eps_dp_and_a_halved_scale_is_not",
        U + "test_dp_quantile.py::test_teaching_and_secure_samplers_follow_the_law_with_power",
        U + "test_dp_quantile.py::test_rank_error_stays_within_the_bound_on_heavy_tailed_data_over_1000_runs"],
    # baselines and the secure sampler
    "baselines.ClippedSum": [A + "test_scale_audit.py::test_baseline_clipped_sum_scale_with_power",
                             "statdp:baselines.clipped_sum.laplace", "statdp:baselines.clipped_sum.gaussian",
                             "statdp:baselines.clipped_sum.secure"],
    "secure.SecureSampler": [U + "test_secure.py::test_discrete_gaussian_exact_law_with_power",
                             U + "test_secure.py::test_discrete_laplace_exact_law_with_power",
                             U + "test_secure.py::test_secure_selection_law_and_its_privacy",
                             U + "test_secure.py::test_rounded_up_sensitivity_never_weakens_the_guarantee",
                             "statdp:prdp.count.secure", "statdp:baselines.clipped_sum.secure"],
}


#: noise sampler of prdp_core.core.noise → its distribution test (with power against ±10%)
NOISE_INVENTORY: dict[str, list[str]] = {
    "laplace": [U + "test_noise.py::test_laplace_scale_with_power"],
    "gaussian": [U + "test_noise.py::test_gaussian_sigma_with_power"],
    "two_sided_geometric": [U + "test_noise.py::test_two_sided_geometric_exact_pmf_with_power"],
    "discrete_laplace": [U + "test_noise.py::test_discrete_laplace_exact_pmf_with_power"],
    "discrete_gaussian": [U + "test_noise.py::test_discrete_gaussian_with_power"],
    "exponential_mechanism": [U + "test_noise.py::test_exponential_mechanism_distribution"],
}


def _noise_samplers() -> set[str]:
    """Public functions of prdp_core.core.noise that draw from a generator (take ``rng``)."""
    from prdp_core.core import noise

    return {name for name, obj in vars(noise).items()
            if inspect.isfunction(obj) and obj.__module__ == noise.__name__ and not name.startswith("_")
            and "rng" in inspect.signature(obj).parameters}


#: functions that take and return a Release without drawing noise or touching the data
NOT_MECHANISMS = {
    "personalized.flag_design_defaults": "labels parameters of an existing release as data-derived",
}


def _mechanism_entry_points() -> set[str]:
    """Public functions returning a Release (or release lists) and classes with release/answer."""
    found = set()
    for m, path in MODULES.items():
        top = importlib.import_module(f"prdp_core.mechanisms.{path}")
        subs = [importlib.import_module(f"{top.__name__}.{s.name}") for s in pkgutil.iter_modules(top.__path__)
                if f"{path}.{s.name}" not in MODULES.values()] if hasattr(top, "__path__") else [top]
        for mod in subs:
            for name, obj in vars(mod).items():
                if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                    continue
                if inspect.isfunction(obj) and "Release" in str(inspect.signature(obj).return_annotation):
                    found.add(f"{m}.{name}")
                elif inspect.isclass(obj) and (hasattr(obj, "release") or hasattr(obj, "answer")):
                    found.add(f"{m}.{name}")
    return found


def _test_names(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_mechanism_entry_point_has_an_audit():
    missing = sorted(_mechanism_entry_points() - set(INVENTORY) - set(NOT_MECHANISMS))
    assert not missing, f"mechanisms without an audit entry: {missing}"


@pytest.mark.parametrize("mechanism", sorted(INVENTORY))
def test_inventory_points_to_existing_audits(mechanism):
    refs = INVENTORY[mechanism]
    assert refs, mechanism
    for ref in refs:
        if ref.startswith("statdp:"):
            assert ref.removeprefix("statdp:") in CASES, ref
        else:
            path, name = ref.split("::")
            assert name in _test_names(path), ref



def test_every_noise_sampler_has_a_distribution_test():
    missing = sorted(_noise_samplers() - set(NOISE_INVENTORY))
    assert not missing, f"noise samplers without a distribution test: {missing}"
    for name, refs in NOISE_INVENTORY.items():
        assert refs, name
        for ref in refs:
            path, test = ref.split("::")
            assert test in _test_names(path), ref


def test_exclusions_name_existing_functions():
    found = _mechanism_entry_points()
    assert set(NOT_MECHANISMS) <= found, sorted(set(NOT_MECHANISMS) - found)
