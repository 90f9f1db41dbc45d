"""Batched forward kinematics, Jacobian and damped least-squares IK in torch.

Frames: everything is in the robot's root (base link) frame. `tcp_pose(q)` is the TCP link's
pose (N, 7) = xyz + quaternion (w, x, y, z); the Jacobian's rows are (linear; angular) velocity
of the TCP origin, both expressed in the root frame. IK solves for the arm joints only and
leaves other joints (the gripper) where they are.
"""

from __future__ import annotations

import numpy as np
import torch

from envs.core.pose import matrix_to_quat, quat_conj, quat_mul, quat_to_axis_angle
from envs.robots.urdf import RobotModel


def _skew(axis: np.ndarray) -> np.ndarray:
    x, y, z = axis
    return np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]], dtype=float)


class ChainKinematics:
    """The serial chain from the root to `tip` of `model`; `arm_indices` name the active joints
    along it, as indices into the full qpos vector."""

    def __init__(self, model: RobotModel, tip: str, arm_indices: list[int]):
        active = [j.name for j in model.active_joints]
        chain = model.chain_to(tip)
        self._steps: list[tuple[str, torch.Tensor, torch.Tensor | None, torch.Tensor | None, int]] = []
        pending = np.eye(4)
        moving = [j for j in chain if j.kind != "fixed"]
        if [active.index(j.name) for j in moving] != list(arm_indices):
            raise ValueError(f"arm joints {arm_indices} are not the moving joints on the chain to {tip}")
        self.arm_indices = list(arm_indices)
        for joint in chain:
            pending = pending @ joint.origin.matrix()
            if joint.kind == "fixed":
                continue
            axis = np.asarray(joint.axis, dtype=float)
            axis /= np.linalg.norm(axis)
            k = _skew(axis)
            self._steps.append(
                (joint.kind, torch.tensor(pending), torch.tensor(k), torch.tensor(k @ k), torch.tensor(axis))
            )
            pending = np.eye(4)
        self._tail = torch.tensor(pending)
        self.lower = torch.tensor([j.lower for j in moving])
        self.upper = torch.tensor([j.upper for j in moving])

    def _forward(self, q_arm: torch.Tensor, with_jacobian: bool):
        """q_arm: (N, n) float64. Returns the tip transform (N, 4, 4) and optionally J (N, 6, n)."""
        n = q_arm.shape[0]
        t = torch.eye(4, dtype=torch.float64).expand(n, 4, 4)
        axes, origins = [], []
        for i, (kind, origin, k, k2, axis) in enumerate(self._steps):
            t = t @ origin
            qi = q_arm[:, i, None, None]
            m = torch.eye(4, dtype=torch.float64).repeat(n, 1, 1)
            if kind == "prismatic":
                m[:, :3, 3] = qi[:, :, 0] * axis
            else:
                m[:, :3, :3] += torch.sin(qi) * k + (1 - torch.cos(qi)) * k2
            if with_jacobian:
                axes.append((t[:, :3, :3] @ axis)[:, :, None].squeeze(-1))
                origins.append(t[:, :3, 3])
            t = t @ m
        t = t @ self._tail
        if not with_jacobian:
            return t, None
        p = t[:, :3, 3]
        cols = []
        for (kind, *_), z, o in zip(self._steps, axes, origins):
            if kind == "prismatic":
                cols.append(torch.cat((z, torch.zeros_like(z)), 1))
            else:
                cols.append(torch.cat((torch.cross(z, p - o, dim=1), z), 1))
        return t, torch.stack(cols, 2)

    def tcp_pose(self, q_arm: torch.Tensor) -> torch.Tensor:
        """(N, n) arm joint positions -> (N, 7) TCP pose in the root frame."""
        t, _ = self._forward(q_arm.double(), with_jacobian=False)
        return torch.cat((t[:, :3, 3], matrix_to_quat(t[:, :3, :3])), 1).to(q_arm.dtype)

    def ik(
        self,
        target: torch.Tensor,
        q_init: torch.Tensor,
        iterations: int = 8,
        damping: float = 0.05,
        pos_only: bool = False,
    ) -> torch.Tensor:
        """Damped least squares from q_init (N, n) towards target (N, 7) root-frame TCP poses.
        With pos_only, orientation is free. Results are clipped to the joint limits."""
        q = q_init.double().clone()
        goal_p = target[:, :3].double()
        goal_q = target[:, 3:].double()
        lam2 = damping**2
        for _ in range(iterations):
            t, jac = self._forward(q, with_jacobian=True)
            err_p = goal_p - t[:, :3, 3]
            if pos_only:
                err, j = err_p, jac[:, :3]
            else:
                cur_q = matrix_to_quat(t[:, :3, :3])
                err_r = quat_to_axis_angle(quat_mul(goal_q, quat_conj(cur_q)))
                err, j = torch.cat((err_p, err_r), 1), jac
            jjt = j @ j.transpose(1, 2) + lam2 * torch.eye(j.shape[1], dtype=torch.float64)
            dq = (j.transpose(1, 2) @ torch.linalg.solve(jjt, err[:, :, None]))[:, :, 0]
            q = torch.minimum(torch.maximum(q + dq, self.lower), self.upper)
        return q.to(q_init.dtype)
