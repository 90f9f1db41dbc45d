"""Scene pieces several tasks share: the table, boxes, and the robot's place at the table."""

from __future__ import annotations

import sapien

from envs.core.world import ActorGroup, BatchedWorld

TABLE_HALF = (0.6, 0.6, 0.02)  # the table top is the env's z = 0 plane
ROBOT_ROOT = sapien.Pose([-0.615, 0.0, 0.0])  # robot base at the table's back edge, facing +x


def build_table(world: BatchedWorld, visual: bool = False) -> ActorGroup:
    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_box_collision(half_size=list(TABLE_HALF))
        if visual:
            b.add_box_visual(half_size=list(TABLE_HALF), material=sapien.render.RenderMaterial(base_color=[0.55, 0.42, 0.3, 1]))
        return b.build_static(name=f"table_{i}")

    if not any(True for _ in world.scene.get_entities() if _.name == "ground"):
        ground = world.scene.create_actor_builder()
        ground.add_plane_collision(sapien.Pose([0, 0, -0.92], [0.7071068, 0, -0.7071068, 0]))
        ground.build_static(name="ground")
    return world.add_actor("table", build, sapien.Pose([0, 0, -TABLE_HALF[2]]))


def build_box(
    world: BatchedWorld,
    name: str,
    half_size: tuple[float, float, float],
    color: tuple[float, float, float, float],
    visual: bool = False,
    kinematic: bool = False,
) -> ActorGroup:
    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_box_collision(half_size=list(half_size))
        if visual:
            b.add_box_visual(half_size=list(half_size), material=sapien.render.RenderMaterial(base_color=list(color)))
        return b.build_kinematic(name=f"{name}_{i}") if kinematic else b.build(name=f"{name}_{i}")

    return world.add_actor(name, build, sapien.Pose([0, 0, half_size[2]]))
