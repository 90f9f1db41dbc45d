"""The drawing tasks (DrawTriangle-v1, DrawSVG-v1) and their robot, panda_stick: dots appear where
the tip touches, per env; the drawing is env state (set_state restores it and what success
sees); the success boundaries; the SVG path reader; the gripperless controllers."""

import numpy as np
import pytest
import torch

from envs.tasks.draw_svg import svg_goal, svg_lines
from envs.tasks.drawing import DOT_Z, HIDDEN_Z, TOUCH_HEIGHT, coverage

DRAWING = ["DrawTriangle-v1", "DrawSVG-v1"]


def _tip_to(base, xy: torch.Tensor, z: float) -> None:
    """Put every env's arm (by IK, at rest) with its tip at (xy, z), pointing down."""
    agent = base.agent
    target = agent.tcp_pose_root().double()
    target[:, :2] = xy.double() - agent.root_pose[:, :2].double()
    target[:, 2] = z
    q = agent.kinematics.ik(target, agent.arm_qpos.double(), iterations=200)
    agent.reset_to(q.float(), torch.arange(base.num_envs))


def _set_dots(base, xy: torch.Tensor) -> None:
    """Dots 0..k-1 of every env on the canvas at xy (N, k, 2), the rest unused, via set_state_dict."""
    state = base.get_state_dict()
    for k in range(xy.shape[1]):
        s = state["actors"][f"dot_{k}"].clone()
        s[:, :2], s[:, 2] = xy[:, k], DOT_Z
        state["actors"][f"dot_{k}"] = s
    base.set_state_dict(state)


@pytest.mark.parametrize("env_id", DRAWING)
def test_dots_are_drawn_under_the_touching_tip_only(make, env_id):
    base = make(env_id, num_envs=2, control_mode="pd_joint_pos").unwrapped
    base.reset(seed=0)
    xy = torch.tensor([[-0.1, 0.05], [-0.05, -0.1]])
    _tip_to(base, xy, TOUCH_HEIGHT - 0.002)
    hold = base.agent.arm_qpos.clone()
    base.step(hold)
    tip = base.agent.tcp_pose[:, :3]
    assert base.draw_step.tolist() == [1, 1] and (tip[:, 2] < TOUCH_HEIGHT).all()
    assert torch.allclose(base.dot_pos[:, 0, :2], tip[:, :2]) and (base.dot_pos[:, 0, 2] == DOT_Z).all()
    assert (base.dot_pos[:, 1:, 2] == HIDDEN_Z).all()
    base.reset(options={"env_idx": [1]})  # env 1 back at rest, its tip up, its ink restarted
    assert base.draw_step.tolist() == [1, 0] and (base.dot_pos[1, :, 2] == HIDDEN_Z).all()
    assert base.dot_pos[0, 0, 2] == DOT_Z
    hold[1] = base.agent.arm_qpos[1]
    base.step(hold)
    assert base.draw_step.tolist() == [2, 1]
    assert base.dot_pos[0, 1, 2] == DOT_Z and base.dot_pos[1, 0, 2] == HIDDEN_Z


@pytest.mark.parametrize("env_id", DRAWING)
def test_drawing_is_env_state(make, env_id):
    """A drawing (its dots, draw_step and what success sees) comes back with set_state, also into
    an env reset to another goal, and the next dot goes where it would have gone."""
    base = make(env_id, num_envs=2, obs_mode="state").unwrapped
    base.reset(seed=3)
    ref = base.reference_xy
    _set_dots(base, ref)
    base.draw_step[:] = ref.shape[1]
    saved = base.get_state()
    assert base.evaluate()["success"].all()
    assert base.get_state_dict()["task"]["draw_step"][:, 0].tolist() == [ref.shape[1]] * 2
    obs = base.get_obs(base.evaluate())
    base.reset(seed=9)
    assert not base.evaluate()["success"].any()
    base.set_state(saved)
    assert base.evaluate()["success"].all() and torch.equal(base.get_state(), saved)
    assert torch.allclose(base.get_obs(base.evaluate()), obs)
    assert base.draw_step.tolist() == [ref.shape[1]] * 2


def test_out_of_ink_draws_nothing_more(make):
    base = make("DrawTriangle-v1", num_envs=1).unwrapped
    base.reset(seed=0)
    base.draw_step[:] = base.max_dots
    before = base.get_state()
    base._after_control_step()
    assert base.draw_step.item() == base.max_dots and torch.equal(base.get_state()[:, :-1], before[:, :-1])


@pytest.mark.parametrize("env_id", DRAWING)
def test_success_boundaries(make, env_id):
    """A dot on every reference point succeeds; one more dot just inside the threshold beyond
    the first vertex too, just outside not; and a drawing that leaves part of the goal farther
    than the threshold from every dot does not."""
    base = make(env_id, num_envs=2).unwrapped
    base.reset(seed=1)
    ref, thr = base.reference_xy, base.threshold
    vertex = base.points[:, 0, :2]
    outward = vertex - base.points[:, :, :2].mean(1)
    outward = outward / outward.norm(dim=1, keepdim=True)
    for d, ok in ((thr - 1e-4, True), (thr + 1e-4, False)):
        base.reset(seed=1)
        _set_dots(base, torch.cat((ref, (vertex + d * outward)[:, None]), 1))
        assert base.evaluate()["success"].tolist() == [ok, ok]
    # the dots near vertex 0 only: points farther than the threshold from it are uncovered
    base.reset(seed=1)
    near = (ref - vertex[:, None]).norm(dim=2) < thr / 2
    keep = [ref[i][near[i]][:1].expand(5, 2) for i in range(2)]
    _set_dots(base, torch.stack(keep))
    assert not base.evaluate()["success"].any()


def test_coverage_counts_drawn_dots_only():
    points = torch.tensor([[[0.0, 0.0], [0.1, 0.0]]])
    dots = torch.tensor([[[0.0, 0.01, DOT_Z], [0.5, 0.5, HIDDEN_Z], [0.1, 0.02, DOT_Z]]])
    hit, stray = coverage(dots, points, 0.025)
    assert hit.tolist() == [[True, True]] and stray.tolist() == [False]  # the far dot is unused
    dots[0, 1, 2] = DOT_Z
    assert coverage(dots, points, 0.025)[1].tolist() == [True]


def test_svg_reader_commands():
    square = svg_lines("M0 0 l1 0 0 1 h-1 z")
    assert np.allclose(square, [[[0, 0], [1, 0]], [[1, 0], [1, 1]], [[1, 1], [0, 1]], [[0, 1], [0, 0]]])
    assert len(svg_lines("M0 0 H1 V1 H0 V0 Z")) == 4  # Z at the start adds no line
    curve = svg_lines("M0 0 Q1 1 2 0")
    assert curve.shape == (4, 2, 2) and np.allclose(curve[0, 0], [0, 0]) and np.allclose(curve[-1, 1], [2, 0])
    assert np.allclose(svg_lines("M0 0 C0 1 1 1 1 0")[2, 0], [0.5, 0.75])  # t = 1/2 of the cubic
    vertices, segments, continuous = svg_goal("M0 0 L4 0 M4 4 L0 4")
    assert not continuous and vertices.shape == (3, 3) and np.isclose(np.abs(segments[..., :2]).max(), 0.125)
    for bad in ("M0 0 A1 1 0 0 1 2 2", "L1 1", "M0 0 L1"):
        with pytest.raises(ValueError, match="SVG path"):
            svg_lines(bad)


def test_drawsvg_takes_a_path(make):
    base = make("DrawSVG-v1", num_envs=1, svg="M0 0 L10 0 L10 10", obs_mode="state_dict").unwrapped
    obs, _ = base.reset(seed=0)
    assert base.points.shape == (1, 3, 3) and obs["extra"]["vertices"].shape == (1, 9)
    assert obs["extra"]["continuous"].tolist() == [[1.0]]


def test_panda_stick_controllers_have_no_gripper(make):
    env = make("DrawTriangle-v1", num_envs=2, control_mode="pd_joint_pos")
    base = env.unwrapped
    base.reset(seed=0)
    assert base.controller.gripper is None and env.action_space.shape == (2, 7)
    target = base.agent.arm_qpos + torch.tensor([0.2, -0.1, 0.1, 0.2, -0.2, 0.1, 0.3])
    for _ in range(40):
        env.step(target)
    assert (base.agent.arm_qpos - target).abs().max() < 0.01
    env = make("DrawTriangle-v1", num_envs=2, control_mode="pd_ee_target_delta_pos")
    base = env.unwrapped
    base.reset(seed=0)
    start = base.agent.tcp_pose[:, :3].clone()
    for _ in range(3):
        env.step(torch.tensor([[0.5, -0.3, 0.0]] * 2))
    for _ in range(20):
        env.step(torch.zeros(2, 3))
    moved = base.agent.tcp_pose[:, :3] - start
    assert (moved - torch.tensor([0.15, -0.09, 0.0])).norm(dim=1).max() < 0.01
