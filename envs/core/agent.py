"""A robot in every env: the batched accessors tasks and controllers use.

Tasks ask for TCP pose, gripper opening and arm joint positions here and never index a robot's
joints themselves. Readings are cached by the world until the scene changes; drive targets are
mirrored in `targets` so controllers never read them back from PhysX.
"""

from __future__ import annotations

import math

import numpy as np
import sapien
import torch

from envs.core.build import SELF_COLLISION_BIT, build_articulation
from envs.core.pose import pose_mul, pose_mul_np, quat_apply, quat_conj
from envs.core.world import ActorGroup, ArticulationGroup, BatchedWorld
from envs.robots.base import RobotSpec
from envs.robots.kinematics import ChainKinematics

PAD_HALF = 0.01  # half the size of a finger pad along its face (m): an object may sit this far off-centre and be held


class Agent:
    """One robot in every env. `name` names its articulation in the env state, `obs_key` its
    entry in a multi-robot observation (ManiSkill's names: see envs/core/env.py). Robots that
    share an env need different `ignore_bit`s to collide with each other (see envs/core/build.py)."""

    def __init__(
        self,
        world: BatchedWorld,
        spec: RobotSpec,
        root_pose: sapien.Pose,
        name: str,
        ignore_bit: int = SELF_COLLISION_BIT,
        obs_key: str | None = None,
    ):
        self.spec = spec
        self.name = name
        self.obs_key = obs_key or name
        model = spec.model

        def build(scene: sapien.Scene, i: int, pose: sapien.Pose):
            return build_articulation(
                scene, model, pose, f"{name}_{i}", visual=world.visual, ignore_bit=ignore_bit, link_materials=spec.link_materials
            )

        self.group: ArticulationGroup = world.add_articulation(name, build, root_pose)
        self.num_envs = world.num_envs
        self.dof = self.group.dof
        self.arm = spec.arm_indices
        self.gripper = spec.gripper_indices
        self.kinematics = ChainKinematics(model, spec.tcp_link, self.arm)
        p = root_pose
        self.root_pose = torch.tensor([[*p.p, *p.q]], dtype=torch.float32).expand(self.num_envs, 7).contiguous()
        self.set_drives(spec.arm_drive.stiffness, spec.arm_drive.damping)
        for js in self.group.joints:
            for c in self.gripper:  # none for a robot without a gripper
                d = spec.gripper_drive
                js[c].set_drive_property(d.stiffness, d.damping, d.force_limit, "force")
        self.targets = torch.zeros(self.num_envs, self.dof)
        rest = torch.tensor(spec.rest_qpos, dtype=torch.float32)[None, self.arm]
        self._tcp_hemisphere = pose_mul(self.root_pose[:1], self.kinematics.tcp_pose(rest))[:, 3:]  # (1, 4)
        self._physx = world.physx
        # the fingers: each gripper joint's child link, and the way it moves to open (its joint
        # axis, in the link's own frame)
        joints = {j.name: j for j in model.joints}
        self.finger_links = [joints[n].child for n in spec.gripper_joints]
        self._opening_axes = torch.tensor([joints[n].axis for n in spec.gripper_joints], dtype=torch.float32)  # (2, 3)

    def set_drives(self, stiffness: float, damping: float) -> None:
        """Drive gains of the arm joints (position control: both; velocity control: stiffness 0)."""
        f = self.spec.arm_drive.force_limit
        for js in self.group.joints:
            for c in self.arm:
                js[c].set_drive_property(stiffness, damping, f, "force")

    # ---- readings (cached by the world until the scene changes) -------------------------------
    @property
    def qpos(self) -> torch.Tensor:  # (N, dof)
        return self.group.qpos()

    @property
    def qvel(self) -> torch.Tensor:  # (N, dof)
        return self.group.qvel()

    def sync_targets(self) -> None:
        """Re-read drive targets from the simulator (after set_state)."""
        self.targets = self.group.drive_targets()

    @property
    def arm_qpos(self) -> torch.Tensor:  # (N, n_arm)
        return self.qpos[:, self.arm]

    @property
    def gripper_opening(self) -> torch.Tensor:  # (N,) summed joint travel, metres for parallel grippers
        return self.qpos[:, self.gripper].sum(1)

    def tcp_pose_root(self, qpos: torch.Tensor | None = None) -> torch.Tensor:  # (N, 7) in the root frame
        q = self.qpos if qpos is None else qpos
        return self.kinematics.tcp_pose(q[:, self.arm])

    @property
    def tcp_pose(self) -> torch.Tensor:  # (N, 7) env-local, cached until the scene changes
        """The TCP's pose, its quaternion signed into the hemisphere of the rest pose's TCP
        orientation: continuous over every motion short of a half turn from rest, where a
        w >= 0 convention would flip sign at the gripper-down pose itself (w = 0 there)."""
        return self.group.cached("tcp_pose", self._signed_tcp_pose)

    def _signed_tcp_pose(self) -> torch.Tensor:
        # in NumPy (an env step reads it for its reward): the same float32 operations as
        # pose_mul's, a few microseconds each instead of torch's dozen
        pose = pose_mul_np(self.root_pose[:1].numpy(), self.tcp_pose_root().numpy())
        flip = (pose[:, 3:] * self._tcp_hemisphere.numpy()).sum(1, keepdims=True) < 0
        pose[:, 3:] = np.where(flip, -pose[:, 3:], pose[:, 3:])
        return torch.from_numpy(pose)

    def is_static(self, threshold: float = 0.2) -> torch.Tensor:  # (N,) bool
        return self.qvel[:, self.arm].abs().max(1).values <= threshold

    # ---- commands -------------------------------------------------------------------------
    def set_targets(self, cols: list[int], values: torch.Tensor) -> None:
        """Position targets of the active joints `cols` for all envs: values (N, len(cols))."""
        self.targets[:, cols] = values
        self.group.set_drive_targets(values, joints=cols)

    def set_velocity_targets(self, cols: list[int], values: torch.Tensor) -> None:
        self.group.set_drive_velocity_targets(values, joints=cols)

    def reset_to(self, qpos: torch.Tensor, env_idx: torch.Tensor) -> None:
        """Place envs `env_idx` at qpos (len, dof), at rest, with targets there too."""
        self.group.set_qpos(qpos, env_idx)
        self.group.set_qvel(torch.zeros_like(qpos), env_idx)
        self.group.set_drive_targets(qpos, env_idx)
        self.group.set_drive_velocity_targets(torch.zeros_like(qpos), env_idx)
        self.targets[env_idx] = qpos.float()

    def is_grasping(self, obj_pos: torch.Tensor, width: float | torch.Tensor) -> torch.Tensor:
        """(N,) bool: the fingers are driven closed and stopped apart by an object `width` wide
        (m, across the fingers) whose centre obj_pos (N, 3, env-local) lies between the pads.
        A box may sit turned between the fingers, holding them apart by up to its diagonal, and
        off-centre along the pads by up to a pad's half-size."""
        tcp = self.tcp_pose
        local = quat_apply(quat_conj(tcp[:, 3:]), obj_pos - tcp[:, :3]).abs()
        between = (local[:, 1] <= 0.5 * width) & (local[:, [0, 2]].max(1).values <= 0.5 * width + PAD_HALF)
        opening = self.gripper_opening
        stopped = (opening >= width - 0.01) & (opening <= width * math.sqrt(2) + 0.005)
        closing = self.targets[:, self.gripper].sum(1) < opening - 0.002  # a closed grip's targets lie past the object
        return between & stopped & closing

    def finger_contact_forces(self, obj: ActorGroup) -> torch.Tensor:
        """(N, fingers, 3): the contact force (N) `obj` exerts on each finger link, from the
        contacts of the last physics step (PhysX's contact impulses over the time step), as
        ManiSkill's scene.get_pairwise_contact_forces(finger, obj) gives it."""
        return self.group.cached(f"finger_forces/{obj.name}", lambda: self._finger_contact_forces(obj))

    def _finger_contact_forces(self, obj: ActorGroup) -> torch.Tensor:
        n = len(obj.bodies)
        fingers = {id(links[f]): (i, k) for i, links in enumerate(self.group.links) for k, f in enumerate(self.finger_links)}
        owner = {id(b): i for i, b in enumerate(obj.bodies)}
        impulse = torch.zeros(n, len(self.finger_links), 3, dtype=torch.float64)
        for contact in self._physx.get_contacts():
            a, b = contact.bodies
            for finger, other, sign in ((a, b, 1.0), (b, a, -1.0)):  # the impulse acts on bodies[0]
                hit = fingers.get(id(finger))
                if hit is not None and owner.get(id(other)) == hit[0]:
                    total = sum(p.impulse for p in contact.points)
                    impulse[hit[0], hit[1]] += sign * torch.as_tensor(total, dtype=torch.float64)
        return (impulse / self._physx.timestep).float()

    def is_grasping_actor(self, obj: ActorGroup, min_force: float = 0.5, max_angle: float = 85.0) -> torch.Tensor:
        """(N,) bool: ManiSkill's Panda.is_grasping(obj): every finger is pressed by `obj` with
        at least `min_force` N, the force within `max_angle` degrees of the way the finger opens."""
        force = self.finger_contact_forces(obj)  # (N, fingers, 3)
        ok = torch.ones(len(force), dtype=torch.bool)
        for k, link in enumerate(self.finger_links):
            pose = self.group.link_pose(link)
            opening = quat_apply(pose[:, 3:], self._opening_axes[k].expand(len(pose), 3))
            f = force[:, k]
            norm = f.norm(dim=1)
            cos = (f * opening).sum(1) / (norm * opening.norm(dim=1)).clamp_min(1e-6)
            angle = torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0)))
            ok &= (norm >= min_force) & (angle <= max_angle)
        return ok
