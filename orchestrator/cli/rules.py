"""`wirewise rules show`: the shipped rules, to start a site's rules file from."""

import typer

from wirewise.orchestrator.cli.common import JsonOption, command_group, print_json

app = command_group("The health rules: what counts as a defect, and how far wirewise may act on one (docs/fleet.md).")


@app.command()
def show(json: JsonOption = False) -> None:
    """Print the shipped rules file, each value with its reason: copy it to /etc/wirewise/rules.yaml,
    keep what you change, and name it in the configuration (`rules`)."""
    from wirewise.orchestrator.health.rules import DEFAULTS, default_rules

    if json:
        print_json(default_rules().model_dump(by_alias=True))
        return
    typer.echo(DEFAULTS.read_text(), nl=False)
