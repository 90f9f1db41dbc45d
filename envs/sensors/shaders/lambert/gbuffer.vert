#version 450
// SkillForge's camera shader, vertex stage: camera-space position and normal for a single
// forward pass (see gbuffer.frag). Uniform blocks and vertex inputs are the ones SAPIEN binds.

layout(set = 0, binding = 0) uniform CameraBuffer {
  mat4 viewMatrix;
  mat4 projectionMatrix;
  mat4 viewMatrixInverse;
  mat4 projectionMatrixInverse;
  float width;
  float height;
} cameraBuffer;

layout(set = 1, binding = 0) uniform ObjectTransformBuffer {
  mat4 modelMatrix;
} objectTransformBuffer;

layout(set = 1, binding = 1) uniform ObjectDataBuffer {
  uvec4 segmentation;
  float transparency;
  int shadeFlat;
} objectDataBuffer;

layout(location = 0) in vec3 position;
layout(location = 1) in vec3 normal;
layout(location = 2) in vec2 uv;

layout(location = 0) out vec3 outCameraPosition;
layout(location = 1) out vec3 outCameraNormal;
layout(location = 2) out vec2 outUV;
layout(location = 3) out flat int outEntityId;

void main() {
  mat4 toCamera = cameraBuffer.viewMatrix * objectTransformBuffer.modelMatrix;
  vec4 p = toCamera * vec4(position, 1.0);
  outCameraPosition = p.xyz;
  // primitives are unit meshes scaled per axis: normals need the inverse transpose
  outCameraNormal = transpose(inverse(mat3(toCamera))) * normal;
  outUV = uv;
  outEntityId = int(objectDataBuffer.segmentation.y);
  gl_Position = cameraBuffer.projectionMatrix * p;
}
