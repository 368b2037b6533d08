"""SET-b mapping and priorities (IO-SETS paper, section IV-C)."""

import numpy as np
import pytest

from iosets.errors import InputError
from iosets.recommender import map_sets, set_priorities
from iosets.recommender._clusters import decision_cuts
from iosets.recommender._mappings import fit_mapping


def test_set10_boundaries_of_the_paper():
    # "w_iter between 4 and 31 go into S1, between 32 and 316 into S2"
    w = [3.16, 3.17, 4, 31, 32, 316, 317, 1000, 0.5, 0.3]
    assert map_sets(w).tolist() == [0, 1, 1, 1, 2, 2, 3, 3, 0, -1]


def test_exact_half_rounds_up():
    assert map_sets([np.sqrt(10) * 1.0000001, 10**1.5 * 1.0000001]).tolist() == [1, 2]


def test_priorities_are_ten_to_minus_set():
    assert set_priorities([-1, 0, 1, 2]).tolist() == pytest.approx([10, 1, 0.1, 0.01])


def test_other_bases():
    assert map_sets([1, 2, 3, 8], base=2).tolist() == [0, 1, 2, 3]
    assert set_priorities([3], base=2).tolist() == [0.125]


@pytest.mark.parametrize(
    "w, message",
    [
        ([1, 0], "w_iter must be a finite number > 0, got 0.0 at index 1"),
        ([np.nan], "w_iter must be a finite number > 0, got nan at index 0"),
        ([np.inf], "w_iter must be a finite number > 0, got inf at index 0"),
    ],
)
def test_nonpositive_w_iter_is_rejected(w, message):
    with pytest.raises(InputError, match=message):
        map_sets(w)


def test_gmm_boundaries_are_where_the_most_probable_component_changes():
    # equal weights and spreads: the midpoint; a narrow component inside a wide one owns an interval around its mean
    cuts, labels = decision_cuts([0.0, 2.0], [0.5, 0.5], np.log([0.5, 0.5]))
    assert cuts.tolist() == [1.0] and labels.tolist() == [0, 1]
    means, sds, log_weights = np.array([0.0, 1.0]), np.array([1.0, 0.2]), np.log([0.5, 0.5])
    cuts, labels = decision_cuts(means, sds, log_weights)
    # equal densities: (x - 1)^2 / 0.08 - x^2 / 2 = ln 5, i.e. 12 x^2 - 25 x + 12.5 - ln 5 = 0
    disc = 25**2 - 48 * (12.5 - np.log(5))
    assert cuts == pytest.approx([(25 - np.sqrt(disc)) / 24, (25 + np.sqrt(disc)) / 24], rel=1e-12)
    assert labels.tolist() == [0, 1, 0]
    x = np.linspace(-3, 4, 7001)
    best = np.argmax(log_weights - np.log(sds) - 0.5 * ((x[:, None] - means) / sds) ** 2, axis=1)
    assert np.array_equal(labels[np.searchsorted(cuts, x)], best)


@pytest.mark.parametrize("mapping", ["set-10", "set-2", "gmm"])
def test_one_jobs_class_is_the_arrays_to_the_set(mapping):
    # a service classifies one job at a time (classify_one); the batch path, arrays (classify)
    rng = np.random.default_rng(5)
    w_fit = 10 ** rng.uniform(-1, 4, 200)
    fitted = fit_mapping(w_fit, rng.uniform(0, 1, 200), mapping=mapping, min_confidence=0.5)
    w = [*10 ** rng.uniform(-3, 6, 300), np.sqrt(10) * (1 + 1e-15), 10**1.5, np.nan, 0.0, -2.0, 1e-300, 1e300]
    confidence = [*rng.uniform(0, 1, len(w) - 3), np.nan, 0.5, 1.0]
    sets, conservative = fitted.classify(w, confidence)
    one = [fitted.classify_one(None if np.isnan(x) else x, c) for x, c in zip(w, confidence, strict=True)]
    assert one == list(zip(sets.tolist(), conservative.tolist(), strict=True))
    assert {c for _, c in one} == {True, False}
