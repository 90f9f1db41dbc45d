"""Builds SAPIEN articulations and actors from the project's own descriptions.

Nothing here creates a render component unless `visual=True`, so state-only scenes need no
Vulkan device.
"""

from __future__ import annotations

import functools

import numpy as np
import sapien

from typing import TYPE_CHECKING, Mapping

from envs.robots.urdf import Geometry, Joint, Origin, RobotModel

if TYPE_CHECKING:
    from envs.robots.base import LinkMaterial

# SAPIEN's cylinders and capsules lie along their local x axis; URDF's along z.
_Z_TO_X = sapien.Pose(q=[0.7071068, 0.0, 0.7071068, 0.0])
# SAPIEN skips a shape pair whose collision_groups[2] share a bit (and whose collision_groups[3]
# agree, as all ours do): every link of one robot sets the same bit, so a robot never collides
# with itself; robots sharing an env use different bits, so they collide with each other.
SELF_COLLISION_BIT = 31


@functools.lru_cache(maxsize=None)
def to_pose(origin: Origin) -> sapien.Pose:
    """Computed once per origin, as _frame_along's frames (read only: callers compose it); every
    batch's env builds the same robots again."""
    return sapien.Pose(list(origin.xyz), list(origin.quat))


def add_geometry(builder, geom: Geometry, visual: bool, material=None) -> None:
    pose = to_pose(geom.origin)
    if visual:
        mat = sapien.render.RenderMaterial(base_color=list(geom.rgba))
        if geom.kind == "box":
            builder.add_box_visual(pose, [s / 2 for s in geom.size], mat)
        elif geom.kind == "sphere":
            builder.add_sphere_visual(pose, geom.size[0], mat)
        else:
            builder.add_cylinder_visual(pose * _Z_TO_X, geom.size[0], geom.size[1] / 2, mat)
        return
    if geom.kind == "box":
        builder.add_box_collision(pose, [s / 2 for s in geom.size], material=material)
    elif geom.kind == "sphere":
        builder.add_sphere_collision(pose, geom.size[0], material=material)
    else:
        builder.add_cylinder_collision(pose * _Z_TO_X, geom.size[0], geom.size[1] / 2, material=material)


def _axis_frame(joint: Joint) -> sapien.Pose:
    """A frame whose x axis is the joint axis (PhysX joints move along/around x)."""
    return _frame_along(tuple(float(a) for a in joint.axis))


@functools.lru_cache(maxsize=None)
def _frame_along(axis: tuple[float, float, float]) -> sapien.Pose:
    """Computed once per axis: every env builds the same robots (read only: callers compose it)."""
    axis = np.asarray(axis, dtype=float)
    axis /= np.linalg.norm(axis)
    helper = np.array([0.0, 0.0, 1.0]) if abs(axis[0]) > 0.9 else np.array([1.0, 0.0, 0.0])
    y = np.cross(axis, helper)
    y /= np.linalg.norm(y)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2] = axis, y, np.cross(axis, y)
    return sapien.Pose(m)


MIMIC_TENDON_STIFFNESS = 1e5  # SAPIEN's (and ManiSkill's) URDF loaders couple a <mimic> joint this stiffly


def _mimic_tendons(articulation: sapien.physx.PhysxArticulation, model: RobotModel) -> None:
    """A URDF <mimic> joint is coupled to the joint it follows by a fixed tendon, as SAPIEN's URDF
    loader builds it (the joints' links and coefficients in its order): two children of one link
    (the Panda's fingers) through that link, a child of the followed joint's child through its
    grandparent. Without it the fingers move apart under contact, each on its own drive."""
    for joint in model.joints:
        if joint.mimic is None:
            continue
        m = joint.mimic
        this, other = articulation.find_joint_by_name(joint.name), articulation.find_joint_by_name(m.joint)
        if this.parent_link == other.parent_link:
            chain = [this.parent_link, this.child_link, other.child_link]
        elif this.parent_link == other.child_link and this.parent_link.parent is not None:
            chain = [this.parent_link.parent, this.parent_link, this.child_link]
        else:
            raise ValueError(f"{model.name}: joint {joint.name} mimics {m.joint}, which is neither its sibling nor its parent")
        articulation.create_fixed_tendon(chain, [0, -m.multiplier, 1], [0, -1 / m.multiplier, 1],
                                         rest_length=m.offset, stiffness=MIMIC_TENDON_STIFFNESS)


def build_articulation(
    scene: sapien.Scene,
    model: RobotModel,
    root_pose: sapien.Pose,
    name: str,
    visual: bool = False,
    material=None,
    ignore_bit: int = SELF_COLLISION_BIT,
    link_materials: Mapping[str, LinkMaterial] | None = None,
) -> sapien.physx.PhysxArticulation:
    """One fixed-base articulation; its links never collide with each other (they all set
    `ignore_bit` in collision_groups[2]) and feel no gravity (as with a real arm's gravity
    compensation: a zero command holds the arm where it is)."""
    ab = scene.create_articulation_builder()
    builders = {}
    parent_joint = {j.child: j for j in model.joints}
    for link in model.links:
        joint = parent_joint.get(link.name)
        lb = ab.create_link_builder(builders[joint.parent] if joint else None)
        lb.set_name(f"{name}/{link.name}")
        builders[link.name] = lb
        if joint is None:
            lb.set_joint_properties("fixed", [], sapien.Pose(), sapien.Pose())
        else:
            lb.set_joint_name(joint.name)
            frame = _axis_frame(joint)
            kind = {"revolute": "revolute_unwrapped"}.get(joint.kind, joint.kind)
            limits = [] if joint.kind == "fixed" else [[joint.lower, joint.upper]]
            lb.set_joint_properties(kind, limits, to_pose(joint.origin) * frame, frame, 0.0, 0.0)
        own = (link_materials or {}).get(link.name)
        link_material = own.physx() if own is not None else material
        for geom in link.collisions:
            add_geometry(lb, geom, visual=False, material=link_material)
        if visual:
            for geom in link.visuals:
                add_geometry(lb, geom, visual=True)
        if link.inertial is not None:
            frame = to_pose(link.inertial.origin) * sapien.Pose(q=list(link.inertial.axes))
            lb.set_mass_and_inertia(link.inertial.mass, frame, list(link.inertial.diagonal))
        lb.collision_groups[2] |= 1 << ignore_bit
    ab.set_initial_pose(root_pose)
    articulation = ab.build(fix_root_link=True)
    articulation.set_name(name)
    _mimic_tendons(articulation, model)
    for link in articulation.links:
        link.disable_gravity = True
        own = (link_materials or {}).get(link.name.split("/", 1)[-1])
        if own is not None:
            for shape in link.get_collision_shapes():
                shape.set_patch_radius(own.patch_radius)
                shape.set_min_patch_radius(own.min_patch_radius)
    return articulation
