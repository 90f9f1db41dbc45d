"""Success thresholds of PegInsertionSide, PlugCharger and LiftPegUpright, just inside and just
outside each one (states set through set_state_dict), as ManiSkill 3.0.1 draws them."""

import pytest

from tests.parity import lift_peg_upright, peg_insertion_side, plug_charger


def test_peg_insertion_side_head_depth_and_section():
    head_at, r = peg_insertion_side.head_at, peg_insertion_side._radius()
    assert head_at([(-0.0149, 0.0, 0.0), (-0.0151, 0.0, 0.0)]) == (True, False)  # 1.5 cm short of the centre
    assert head_at([(0.05, 0.0, 0.0)]) == (True,)  # deeper is fine, up to the far side
    for y, z in ((1, 0), (-1, 0), (0, 1), (0, -1)):  # inside the hole's square section, |y|, |z| <= r
        inside = (0.0, y * (r - 1e-4), z * (r - 1e-4))
        outside = (0.0, y * (r + 1e-4), z * (r + 1e-4))
        assert head_at([inside, outside]) == (True, False)


def test_plug_charger_distance_and_angle():
    at = plug_charger.charger_at
    assert at([(0.0049, 0.0), (0.0051, 0.0), (-0.0049, 0.0), (-0.0051, 0.0)]) == (True, False, True, False)
    assert at([(0.0, 0.199), (0.0, 0.201), (0.0, -0.199), (0.0, -0.201)]) == (True, False, True, False)
    assert plug_charger._upside_down() is False  # a half turn about the prongs is not the goal


@pytest.mark.parametrize("tilt", [0.079, -0.079])
def test_lift_peg_upright_tilt_and_height(tilt):
    standing = lift_peg_upright.standing
    assert standing([(tilt, 0.0), (tilt * 0.081 / 0.079, 0.0)]) == (True, False)
    assert standing([(0.0, 0.0049), (0.0, 0.0051), (0.0, -0.0049), (0.0, -0.0051)]) == (True, False, True, False)
