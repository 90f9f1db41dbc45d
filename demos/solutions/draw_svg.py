"""DrawSVG-v1 with its default path (one closed line): the stick's tip lowered onto the first
vertex, then straight from vertex to vertex, a few millimetres above the canvas. A path given
with `svg=` needs a solution of its own (the stages follow the default path's vertex count)."""

from demos.primitives import box_of, draw_through, scene, table_boxes
from demos.solutions.draw_triangle import DRAW_HEIGHT
from demos.stages import Settle, Solution
from envs.tasks.draw_svg import DEFAULT_SVG, svg_goal

VERTICES = len(svg_goal(DEFAULT_SVG)[0])

SOLUTION = Solution(
    env_id="DrawSVG-v1",
    robots=("panda_stick",),
    stages=draw_through("points", VERTICES, closed=False, height=DRAW_HEIGHT) + (Settle(),),
    obstacles=scene(table_boxes, box_of("canvas", "canvas_half_size", margin=-0.002)),
)
