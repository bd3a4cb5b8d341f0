"""faultbench: a fake, stateful, deliberately broken world for tool-using AI agents."""
