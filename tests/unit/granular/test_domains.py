"""Granular DP public domains: the registered samples' documented categories."""

from __future__ import annotations

from prdp_core.mechanisms.granular.data import encode_attributes
from prdp_core.mechanisms.granular.domains import SAMPLE_DOMAINS, sample_domains


def test_sample_domains_cover_the_samples():
    """The documented domains hold every value the registered samples produce (nothing falls in "(other)")."""
    from prdp_core.data import samples

    for name, doms in SAMPLE_DOMAINS.items():
        if name not in samples.names():
            continue
        n = 5 if name == "table2_example" else None if samples.info(name).kind == "real" else 20_000
        table = samples.load(name, n=n, seed=1)
        data = encode_attributes(table, list(doms), sample_domains(name))
        for j, c in enumerate(doms):
            assert data.domains[j][-1] == "(other)"
            assert not (data.codes[:, j] == len(data.domains[j]) - 1).any(), (name, c)
    assert sample_domains("nope") == {}
