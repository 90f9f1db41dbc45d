"""Batched forward kinematics, Jacobian and damped least-squares IK.

Frames: everything is in the robot's root (base link) frame. `tcp_pose(q)` is the TCP link's
pose (N, 7) = xyz + quaternion (w, x, y, z); the Jacobian's rows are (linear; angular) velocity
of the TCP origin, both expressed in the root frame. IK solves for the arm joints only and
leaves other joints (the gripper) where they are.

`tcp_pose`, which an env step asks for (rewards, observations), is computed in NumPy: a chain of
a dozen 4x4 products on a batch of 16 is a few dozen tiny operations, each a third of a torch
call's cost. The Jacobian and IK, iterated by the end-effector controllers, stay in torch.
"""

from __future__ import annotations

import numpy as np
import torch

from envs.core.pose import matrix_to_quat, quat_conj, quat_mul, quat_to_axis_angle
from envs.robots.urdf import RobotModel


def _matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """envs.core.pose.matrix_to_quat for NumPy: (N, 3, 3) -> (N, 4), Shepperd's method, w >= 0."""
    m00, m11, m22 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    big = np.stack((1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22), 1)
    r = np.sqrt(np.maximum(big, 1e-12))  # 2 |component| of each case's pivot
    a, b, c = m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]
    d, e, f = m[:, 0, 1] + m[:, 1, 0], m[:, 0, 2] + m[:, 2, 0], m[:, 1, 2] + m[:, 2, 1]
    r2 = r * r
    cases = np.stack((r2[:, 0], a, b, c, a, r2[:, 1], d, e, b, d, r2[:, 2], f, c, e, f, r2[:, 3]), 1).reshape(-1, 4, 4)
    rows, pick = np.arange(len(m)), big.argmax(1)
    q = cases[rows, pick] / (2 * r[rows, pick])[:, None]
    q = np.where(q[:, :1] < 0, -q, q)
    return q / np.sqrt((q * q).sum(1, keepdims=True))


def _skew(axis: np.ndarray) -> np.ndarray:
    x, y, z = axis
    return np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]], dtype=float)


class ChainKinematics:
    """The serial chain from the root to `tip` of `model`; `arm_indices` name the active joints
    along it, as indices into the full qpos vector."""

    def __init__(self, model: RobotModel, tip: str, arm_indices: list[int]):
        active = [j.name for j in model.active_joints]
        chain = model.chain_to(tip)
        moving = [j for j in chain if j.kind != "fixed"]
        if [active.index(j.name) for j in moving] != list(arm_indices):
            raise ValueError(f"arm joints {arm_indices} are not the moving joints on the chain to {tip}")
        self.arm_indices = list(arm_indices)
        # each moving joint i: fixed transform origins[i] (from the previous moving joint's frame),
        # then its own motion about/along axes[i]; tail: fixed transform from the last one to the tip
        origins, axes, pending = [], [], np.eye(4)
        for joint in chain:
            pending = pending @ joint.origin.matrix()
            if joint.kind != "fixed":
                origins.append(pending)
                axis = np.asarray(joint.axis, dtype=float)
                axes.append(axis / np.linalg.norm(axis))
                pending = np.eye(4)
        self._origins = torch.tensor(np.array(origins))  # (n, 4, 4)
        self._axes = torch.tensor(np.array(axes))  # (n, 3)
        self._k = torch.tensor(np.array([_skew(a) for a in axes]))  # (n, 3, 3)
        self._k2 = self._k @ self._k
        self._prismatic = torch.tensor([j.kind == "prismatic" for j in moving])
        self._tail = torch.tensor(pending)
        self.lower = torch.tensor([j.lower for j in moving])
        self.upper = torch.tensor([j.upper for j in moving])
        # the same chain for NumPy: joint i moves by I + sin(q) K + (1 - cos(q)) K^2 (revolute) or
        # q along its axis (prismatic), then takes the fixed transform to the next joint (the last
        # one to the tip); the first joint's origin comes before all
        n = len(moving)
        revolute = ~self._prismatic.numpy()[:, None, None]
        self._np_first = origins[0]
        self._np_next = np.array(origins[1:] + [pending])  # (n, 4, 4)
        self._np_k = np.zeros((n, 4, 4))
        self._np_k[:, :3, :3] = np.where(revolute, self._k.numpy(), 0.0)
        self._np_k2 = np.zeros((n, 4, 4))
        self._np_k2[:, :3, :3] = np.where(revolute, self._k2.numpy(), 0.0)
        self._np_slide = np.zeros((n, 4, 4))
        self._np_slide[:, :3, 3] = np.where(revolute[:, :, 0], 0.0, self._axes.numpy())

    def _forward(self, q_arm: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q_arm: (N, n) float64. Returns the tip transform (N, 4, 4) and J (N, 6, n)."""
        n, dof = q_arm.shape
        qq = q_arm[:, :, None, None]
        motion = torch.eye(4, dtype=torch.float64).repeat(n, dof, 1, 1)  # (N, n, 4, 4)
        revolute = torch.eye(3, dtype=torch.float64) + torch.sin(qq) * self._k + (1 - torch.cos(qq)) * self._k2
        motion[:, :, :3, :3] = torch.where(self._prismatic[None, :, None, None], motion[:, :, :3, :3], revolute)
        motion[:, :, :3, 3] = torch.where(self._prismatic[None, :, None], q_arm[:, :, None] * self._axes, 0.0)
        frames = []  # joint frames (after each origin, before the motion)
        t = self._origins[0].expand(n, 4, 4)
        for i in range(dof):
            frames.append(t)
            t = frames[-1] @ motion[:, i]
            if i + 1 < dof:
                t = t @ self._origins[i + 1]
        t = t @ self._tail
        frames = torch.stack(frames, 1)  # (N, n, 4, 4)
        z = (frames[:, :, :3, :3] @ self._axes[None, :, :, None])[..., 0]  # (N, n, 3) joint axes
        lever = t[:, None, :3, 3] - frames[:, :, :3, 3]
        linear = torch.where(self._prismatic[None, :, None], z, torch.cross(z, lever, dim=2))
        angular = torch.where(self._prismatic[None, :, None], torch.zeros_like(z), z)
        return t, torch.cat((linear, angular), 2).transpose(1, 2)

    def tcp_pose(self, q_arm: torch.Tensor) -> torch.Tensor:
        """(N, n) arm joint positions -> (N, 7) TCP pose in the root frame, in q_arm's dtype
        (computed in float64)."""
        q = q_arm.detach().cpu().numpy().astype(np.float64)
        motion = np.eye(4) + np.sin(q)[:, :, None, None] * self._np_k + (1 - np.cos(q))[:, :, None, None] * self._np_k2
        steps = (motion + q[:, :, None, None] * self._np_slide) @ self._np_next  # (N, n, 4, 4)
        t = self._np_first @ steps[:, 0]
        for i in range(1, steps.shape[1]):
            t = t @ steps[:, i]
        pose = np.concatenate((t[:, :3, 3], _matrix_to_quat(t[:, :3, :3])), 1)
        return torch.from_numpy(pose).to(q_arm.dtype)

    def ik(
        self,
        target: torch.Tensor,
        q_init: torch.Tensor,
        iterations: int = 100,
        damping: float = 0.01,
        tol: float = 1e-6,
        pos_only: bool = False,
    ) -> torch.Tensor:
        """Damped least squares from q_init (N, n) towards target (N, 7) root-frame TCP poses,
        iterated until every env's error is below `tol` (m, and rad for orientation) or
        `iterations` ran out. With pos_only, orientation is free. Results are clipped to the
        joint limits."""
        q = q_init.double().clone()
        goal_p = target[:, :3].double()
        goal_q = target[:, 3:].double()
        lam2 = damping**2
        for _ in range(iterations):
            t, jac = self._forward(q)
            err_p = goal_p - t[:, :3, 3]
            if pos_only:
                err, j = err_p, jac[:, :3]
            else:
                cur_q = matrix_to_quat(t[:, :3, :3])
                err_r = quat_to_axis_angle(quat_mul(goal_q, quat_conj(cur_q)))
                err, j = torch.cat((err_p, err_r), 1), jac
            active = err.abs().max(1).values >= tol  # (N,) each env stops on its own: batching never changes a result
            if not active.any():
                break
            jjt = j @ j.transpose(1, 2) + lam2 * torch.eye(j.shape[1], dtype=torch.float64)
            dq = (j.transpose(1, 2) @ torch.linalg.solve(jjt, err[:, :, None]))[:, :, 0]
            q = torch.where(active[:, None], torch.minimum(torch.maximum(q + dq, self.lower), self.upper), q)
        return q.to(q_init.dtype)
