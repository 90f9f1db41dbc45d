"""The Panda's controllers beside ManiSkill 3.0.1's `_controller_configs` and controller classes,
measured on a live PickCube-v1 env per mode (built once)."""

from __future__ import annotations

import math
from functools import cache

import gymnasium as gym
import torch

import envs  # noqa: F401  (registers)
from envs.controllers import ARM_CONTROLLERS
from envs.modes import ControlMode
from tests.parity import Row, Table

_AGENT = "agents/robots/panda/panda.py"
_EE = "agents/controllers/pd_ee_pose.py"
_JOINT = "agents/controllers/pd_joint_pos.py"
LIM_LO = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
LIM_HI = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)


@cache
def _env(mode: str):
    env = gym.make("PickCube-v1", num_envs=1, control_mode=mode)
    env.reset(seed=0)
    return env.unwrapped


def _space(mode: str):
    c = _env(mode).controller
    return (tuple(c.low.tolist()), tuple(c.high.tolist()))


def _raw(mode: str):
    a = _env(mode).controller.arm
    return (tuple(a.raw_low.tolist()), tuple(a.raw_high.tolist()))


def _step_from(mode: str) -> str:
    """Take two +1 steps on the first dim: 'target' when the second step's target is two steps
    from the start, 'measured' when it is one step from the measured state."""
    base = _env(mode)
    base.reset(seed=0)
    a = torch.zeros(1, base.controller.action_dim)
    a[:, 0], a[:, -1] = 1.0, 1.0
    ee = ControlMode(mode).end_effector
    read = (lambda: base.controller.arm.target_pose[0, 0].item()) if ee else (lambda: base.agent.targets[0, 0].item())
    measured = (lambda: base.agent.tcp_pose_root()[0, 0].item()) if ee else (lambda: base.agent.arm_qpos[0, 0].item())
    start = measured()
    base.step(a)
    now = measured()
    base.step(a)
    t = read()
    return "target" if abs(t - (start + 0.2)) < 1e-5 else "measured" if abs(t - (now + 0.1)) < 1e-5 else f"neither ({t})"


def _rows() -> list[Row]:
    n1 = ((-1.0,) * 8, (1.0,) * 8)
    rows = [
        Row("control modes", tuple(m for m in (
            "pd_joint_delta_pos", "pd_joint_pos", "pd_ee_delta_pos", "pd_ee_delta_pose", "pd_ee_pose",
            "pd_joint_target_delta_pos", "pd_ee_target_delta_pos", "pd_ee_target_delta_pose",
            "pd_joint_vel", "pd_joint_pos_vel", "pd_joint_delta_pos_vel")),
            lambda: tuple(m.value for m in ARM_CONTROLLERS), _AGENT),
        Row("pd_joint_delta_pos: action space; raw bounds (rad)", (n1, ((-0.1,) * 7, (0.1,) * 7)),
            lambda: (_space("pd_joint_delta_pos"), _raw("pd_joint_delta_pos")), _AGENT),
        Row("pd_joint_pos: action space (unnormalised: joint limits, gripper [-1, 1])", ((*LIM_LO, -1.0), (*LIM_HI, 1.0)),
            lambda: _space("pd_joint_pos"), _AGENT, tol=1e-5),
        Row("pd_ee_delta_pos: action space; raw bounds (m)", ((((-1.0,) * 4), ((1.0,) * 4)), ((-0.1,) * 3, (0.1,) * 3)),
            lambda: (_space("pd_ee_delta_pos"), _raw("pd_ee_delta_pos")), _AGENT),
        Row("pd_ee_delta_pose: raw bounds (m, rad)", ((-0.1,) * 6, (0.1,) * 6), lambda: _raw("pd_ee_delta_pose"), _AGENT),
        Row("pd_ee_pose: action space (unnormalised: +-2 m, +-2 pi rad)",
            ((-2.0, -2.0, -2.0, -2 * math.pi, -2 * math.pi, -2 * math.pi, -1.0), (2.0, 2.0, 2.0, 2 * math.pi, 2 * math.pi, 2 * math.pi, 1.0)),
            lambda: _space("pd_ee_pose"), _AGENT, tol=1e-5),
        Row("pd_joint_vel: raw bounds (rad/s)", ((-1.0,) * 7, (1.0,) * 7), lambda: _raw("pd_joint_vel"), _AGENT),
        Row("pd_joint_pos_vel: action space (unnormalised)", ((*LIM_LO, *(-1.0,) * 7, -1.0), (*LIM_HI, *(1.0,) * 7, 1.0)),
            lambda: _space("pd_joint_pos_vel"), _AGENT, tol=1e-5),
        Row("pd_joint_delta_pos_vel: raw bounds", ((*(-0.1,) * 7, *(-1.0,) * 7), (*(0.1,) * 7, *(1.0,) * 7)),
            lambda: _raw("pd_joint_delta_pos_vel"), _AGENT, tol=1e-7),
        Row("normalised modes (clip to [-1, 1], scale to bounds)",
            ("pd_ee_delta_pos", "pd_ee_delta_pose", "pd_ee_target_delta_pos", "pd_ee_target_delta_pose", "pd_joint_delta_pos",
             "pd_joint_delta_pos_vel", "pd_joint_target_delta_pos", "pd_joint_vel"),
            lambda: tuple(sorted(m.value for m in ControlMode if m.normalized)), "agents/controllers/base_controller.py"),
    ]
    for mode, expect in (("pd_joint_delta_pos", "measured"), ("pd_joint_target_delta_pos", "target"),
                         ("pd_ee_delta_pos", "measured"), ("pd_ee_target_delta_pos", "target"),
                         ("pd_ee_delta_pose", "measured"), ("pd_ee_target_delta_pose", "target")):
        rows.append(Row(f"{mode}: a delta steps from", expect, lambda mode=mode: _step_from(mode), _EE if "ee" in mode else _JOINT))
    rows += [
        Row("pd_ee_delta_pose: rotation +1 about z turns the target by (rad)", -0.1, lambda: _rot_z(), _EE, tol=1e-5),
        Row("gripper: action -1, 0, 1 -> both finger targets (m)", ((-0.01, -0.01), (0.015, 0.015), (0.04, 0.04)), lambda: _grip(), _JOINT, tol=1e-6),
        Row("pd_joint_vel: arm drive stiffness, damping", (0.0, 100.0), lambda: _vel_drive(), "agents/controllers/pd_joint_vel.py"),
        Row("IK", "pinocchio CLIK from the measured qpos (tolerance 1e-4, 100 iterations)",
            lambda: "batched damped least squares from the measured qpos (tolerance 1e-6, 100 iterations)", "agents/controllers/utils/kinematics.py",
            deviation="batched torch IK instead of pinocchio; both converge onto the same target pose"),
    ]
    return rows


def _rot_z() -> float:
    from envs.core.pose import quat_conj, quat_mul, quat_to_euler_xyz

    base = _env("pd_ee_target_delta_pose")
    base.reset(seed=0)
    before = base.controller.arm.target_pose.clone()
    a = torch.zeros(1, 7)
    a[:, 5], a[:, -1] = 1.0, 1.0
    base.step(a)
    turn = quat_mul(base.controller.arm.target_pose[:, 3:].double(), quat_conj(before[:, 3:].double()))
    return quat_to_euler_xyz(turn)[0, 2].item()


def _grip():
    base = _env("pd_joint_delta_pos")
    out = []
    for g in (-1.0, 0.0, 1.0):
        a = torch.zeros(1, 8)
        a[:, -1] = g
        base.step(a)
        out.append(tuple(base.agent.targets[0, base.agent.gripper].tolist()))
    return tuple(out)


def _vel_drive():
    base = _env("pd_joint_vel")
    j = base.agent.group.joints[0][base.agent.arm[0]]
    return (j.stiffness, j.damping)


TABLE = Table("Controllers", _rows(), order=10, notes=(
    "The Panda's control modes. `pd_ee_delta_*` and `pd_joint_delta_pos` step from the measured TCP pose / qpos, "
    "`*_target_*` from the previous target; ee frames are root_translation:root_aligned_body_rotation with XYZ Euler "
    "rotations. ManiSkill 3.0.1 scales pd_ee_delta_pose's rotation by its lower bound (-0.1), so +1 turns by -0.1 rad; "
    "ours does the same."))
