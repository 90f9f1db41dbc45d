"""Scene pieces several tasks share: the table, boxes, and the robot's place at the table."""

from __future__ import annotations

import sapien

from envs.core.world import ActorGroup, BatchedWorld

TABLE_HALF = (0.6, 0.6, 0.02)  # the table top is the env's z = 0 plane
ROBOT_ROOT = sapien.Pose([-0.615, 0.0, 0.0])  # robot base at the table's back edge, facing +x


FLOOR_Z = -0.92
FLOOR_HALF = (2.0, 2.0, 0.01)  # a finite floor per env: an infinite plane would pair with every body


def build_table(world: BatchedWorld) -> ActorGroup:
    """The table (top at z = 0) and, under it, the env's floor."""

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_box_collision(half_size=list(TABLE_HALF))
        floor = sapien.Pose([0, 0, FLOOR_Z - FLOOR_HALF[2] + TABLE_HALF[2]])
        b.add_box_collision(floor, half_size=list(FLOOR_HALF))
        if world.visual:
            b.add_box_visual(half_size=list(TABLE_HALF), material=sapien.render.RenderMaterial(base_color=[0.55, 0.42, 0.3, 1]))
            b.add_box_visual(floor, half_size=list(FLOOR_HALF), material=sapien.render.RenderMaterial(base_color=[0.4, 0.4, 0.42, 1]))
        return b.build_static(name=f"table_{i}")

    return world.add_actor("table", build, sapien.Pose([0, 0, -TABLE_HALF[2]]))


def build_box(
    world: BatchedWorld,
    name: str,
    half_size: tuple[float, float, float],
    color: tuple[float, float, float, float],
    kinematic: bool = False,
) -> ActorGroup:
    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_box_collision(half_size=list(half_size))
        if world.visual:
            b.add_box_visual(half_size=list(half_size), material=sapien.render.RenderMaterial(base_color=list(color)))
        return b.build_kinematic(name=f"{name}_{i}") if kinematic else b.build(name=f"{name}_{i}")

    return world.add_actor(name, build, sapien.Pose([0, 0, half_size[2]]))
