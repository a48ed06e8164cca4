"""What only tests, examples and benchmarks use: the model zoo of training steps."""
