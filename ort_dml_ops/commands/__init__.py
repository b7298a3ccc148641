"""One module per CLI verb, each with `add_parser(subparsers)` that sets `func(args) -> int`."""
