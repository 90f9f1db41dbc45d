"""Every task module registers its env id on import."""

from envs.tasks import (  # noqa: F401
    cartpole,
    draw_svg,
    draw_triangle,
    lift_peg_upright,
    peg_insertion_side,
    pick_cube,
    place_sphere,
    plug_charger,
    pull_cube,
    pull_cube_tool,
    push_cube,
    stack_cube,
    stack_pyramid,
    two_robot_pick_cube,
)
