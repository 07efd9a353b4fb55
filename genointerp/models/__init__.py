"""Pure nn.Modules built from config dataclasses; they know nothing of files."""
