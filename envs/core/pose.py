"""Batched rigid-body math on torch tensors. Quaternions are (w, x, y, z), poses (..., 7) =
position (3) + quaternion (4), as SAPIEN stores them. Every function takes leading batch dims.
`pose_mul_np` is pose_mul for NumPy arrays, for the env step's hot path (see its docstring)."""

from __future__ import annotations

import numpy as np
import torch


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        -1,
    )


def quat_conj(q: torch.Tensor) -> torch.Tensor:
    return q * q.new_tensor([1.0, -1.0, -1.0, -1.0])


def quat_apply(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(xyz, v, dim=-1)
    return v + w * t + torch.cross(xyz, t, dim=-1)


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        (
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ),
        -1,
    ).reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(m: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) to unit quaternions with w >= 0.

    Each component is recovered from the largest of the four diagonal combinations (Shepperd's
    method): taking signs relative to w alone loses them for half turns, where w is 0."""
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    m01, m02, m10, m12, m20, m21 = m[..., 0, 1], m[..., 0, 2], m[..., 1, 0], m[..., 1, 2], m[..., 2, 0], m[..., 2, 1]
    big = torch.stack((1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22), -1)
    r = big.clamp_min(1e-12).sqrt()  # 2 |component| of each case's pivot
    candidates = torch.stack(
        (
            torch.stack((r[..., 0] ** 2, m21 - m12, m02 - m20, m10 - m01), -1) / (2 * r[..., 0:1]),
            torch.stack((m21 - m12, r[..., 1] ** 2, m01 + m10, m02 + m20), -1) / (2 * r[..., 1:2]),
            torch.stack((m02 - m20, m01 + m10, r[..., 2] ** 2, m12 + m21), -1) / (2 * r[..., 2:3]),
            torch.stack((m10 - m01, m02 + m20, m12 + m21, r[..., 3] ** 2), -1) / (2 * r[..., 3:4]),
        ),
        -2,
    )  # (..., 4 cases, 4)
    pick = big.argmax(-1)[..., None, None].expand(*big.shape[:-1], 1, 4)
    q = candidates.gather(-2, pick).squeeze(-2)
    q = torch.where(q[..., :1] < 0, -q, q)
    return q / q.norm(dim=-1, keepdim=True)


def axis_angle_to_quat(v: torch.Tensor) -> torch.Tensor:
    """Rotation vectors (..., 3) (axis * angle, radians) to quaternions."""
    angle = v.norm(dim=-1, keepdim=True)
    half = 0.5 * angle
    # sin(x/2)/x, with its limit 1/2 near zero
    scale = torch.where(angle > 1e-8, torch.sin(half) / angle.clamp_min(1e-8), 0.5 - angle * angle / 48)
    return torch.cat((torch.cos(half), v * scale), -1)


def quat_to_axis_angle(q: torch.Tensor) -> torch.Tensor:
    """Unit quaternions to rotation vectors with angle in [0, pi]."""
    q = torch.where(q[..., :1] < 0, -q, q)
    sin_half = q[..., 1:].norm(dim=-1, keepdim=True)
    angle = 2.0 * torch.atan2(sin_half, q[..., :1])
    scale = torch.where(sin_half > 1e-8, angle / sin_half.clamp_min(1e-8), 2.0 + sin_half * sin_half / 3)
    return q[..., 1:] * scale


def pose_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Compose poses: a * b (b expressed in a's frame)."""
    return torch.cat((a[..., :3] + quat_apply(a[..., 3:], b[..., :3]), quat_mul(a[..., 3:], b[..., 3:])), -1)


def pose_mul_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """pose_mul on NumPy arrays, operation for operation in the same order. torch fuses a cross
    product's multiply and subtract (one rounding where this rounds twice), so float32 results
    are pose_mul's bit for bit where a turns about a coordinate axis (every robot root: each
    cross product term then has one non-zero product), and within the last bit otherwise."""

    def cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.stack((u[..., 1] * v[..., 2] - u[..., 2] * v[..., 1], u[..., 2] * v[..., 0] - u[..., 0] * v[..., 2],
                         u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]), -1)

    w, xyz, v = a[..., 3:4], a[..., 4:], b[..., :3]
    t = 2.0 * cross(xyz, v)
    aw, ax, ay, az = np.moveaxis(a[..., 3:], -1, 0)
    bw, bx, by, bz = np.moveaxis(b[..., 3:], -1, 0)
    q = np.stack((
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ), -1)
    return np.concatenate((a[..., :3] + (v + w * t + cross(xyz, t)), q), -1)


def pose_inv(p: torch.Tensor) -> torch.Tensor:
    qi = quat_conj(p[..., 3:])
    return torch.cat((-quat_apply(qi, p[..., :3]), qi), -1)


def quat_angle(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Angle (radians) of the rotation between unit quaternions a and b."""
    dot = (a * b).sum(-1).abs().clamp(max=1.0)
    return 2.0 * torch.acos(dot)


def euler_xyz_to_quat(e: torch.Tensor) -> torch.Tensor:
    """(..., 3) intrinsic X-Y-Z Euler angles, R = Rx(e0) Ry(e1) Rz(e2) (ManiSkill's "XYZ"
    convention for end-effector rotations) -> (..., 4) quaternion (w, x, y, z)."""
    half = e / 2
    c, s = torch.cos(half), torch.sin(half)
    zero = torch.zeros_like(c[..., 0])
    qx = torch.stack((c[..., 0], s[..., 0], zero, zero), -1)
    qy = torch.stack((c[..., 1], zero, s[..., 1], zero), -1)
    qz = torch.stack((c[..., 2], zero, zero, s[..., 2]), -1)
    return quat_mul(quat_mul(qx, qy), qz)


def quat_to_euler_xyz(q: torch.Tensor) -> torch.Tensor:
    """Inverse of euler_xyz_to_quat: (..., 4) -> (..., 3) with e1 in [-pi/2, pi/2]."""
    m = quat_to_matrix(q)
    return torch.stack(
        (
            torch.atan2(-m[..., 1, 2], m[..., 2, 2]),
            torch.asin(m[..., 0, 2].clamp(-1.0, 1.0)),
            torch.atan2(-m[..., 0, 1], m[..., 0, 0]),
        ),
        -1,
    )
