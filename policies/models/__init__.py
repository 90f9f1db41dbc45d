"""Networks: observation encoders, the BC MLP, the diffusion 1-D UNet and its noise schedule."""
