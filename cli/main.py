"""``pypto``: the command line. Subcommands arrive with their issues (transpile, explain, graph)."""

from __future__ import annotations

import click

import pypto


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(pypto.__version__, prog_name="pypto")
def main():
    """PyPTO: NumPy-style Python compiled into fused, parallel kernels.

    \b
    Examples:
      pypto ops              list every registered op with its kind
      pypto ops --kind map   only the elementwise ops
    """


@main.command()
@click.option("--kind", type=click.Choice(pypto.registry.KINDS), help="Only ops of this kind.")
def ops(kind):
    """List the op registry: name, kind, aliases."""
    for op in sorted(pypto.REGISTRY.ops(), key=lambda o: (o.kind, o.name)):
        if kind is None or op.kind == kind:
            aliases = f"  (also {', '.join(op.aliases)})" if op.aliases else ""
            click.echo(f"{op.kind:10} {op.name}{aliases}")


if __name__ == "__main__":
    main()
