"""The slow tests: statistical checks and audits whose claims need many draws or whole
runs (each over 20 s on a loaded 2-core machine, measured with ``pytest --durations``).

``tests/conftest.py`` marks them ``slow``: ``make test`` leaves them out (the everyday
suite, under 10 minutes on 2 cores); ``make test-slow`` runs them alone (CI runs it after
``make test``) and ``make test-all`` with everything else, as every change to a mechanism,
an audit or the engine's bins must.
An entry is a test's node id, or its prefix (every parameter of it).
"""

from __future__ import annotations

SLOW_TESTS = (
    "tests/engine/test_bins.py::test_the_bins_are_a_function_of_released_values_only",
    "tests/engine/test_bins.py::test_the_option_spends_the_same_and_pays_on_a_loose_range",
    "tests/privacy/test_audit_cases.py::test_each_audit_case_keeps_its_claim[fixed-fraction]",
    "tests/privacy/test_audit_cases.py::test_each_audit_case_keeps_its_claim[fixed-near-tie]",
    "tests/privacy/test_neighbours.py::test_evaluate_says_nothing_else_about_neighbours",
    "tests/privacy/test_neighbours.py::test_synth_share_ledger_and_share_report_of_neighbours",
    "tests/privacy/test_neighbours.py::test_saved_models_of_neighbours_match",
    "tests/privacy/test_refine_audit.py::test_the_stage_stays_below_its_ledger",
    "tests/privacy/test_run_audit.py::test_a_whole_run_stays_below_its_ledger",
    "tests/privacy/test_mutants.py::test_each_mutant_is_caught[noise-source-half-scale]",
    "tests/test_pubmix_engine.py::test_pubmix_in_pe_meets_the_budget",
    "tests/test_invalid_rows.py::test_soft_votes_with_drop_are_calibrated_for_the_empty_vote",
)
