"""``okfgit remote [show|set URL|remove]``: the global tier's git remote."""

from __future__ import annotations

import click

from okfgit.commands._common import emit_json, json_option, workspace


@click.group("remote", invoke_without_command=True)
@click.pass_context
def remote_cmd(click_ctx: click.Context) -> None:
    """Show, set or remove the global tier's git remote: the repository on any git host
    (or a path) through which one person's global knowledge reaches every machine.
    `okfgit sync` exchanges with it (fetch, merge by concept, push; never forced).
    Credentials are git's business: a URL with a password is refused. Without a
    subcommand: show."""
    if click_ctx.invoked_subcommand is None:
        click_ctx.invoke(show_cmd)


@remote_cmd.command("show")
@json_option
def show_cmd(as_json: bool = False) -> None:
    """Show the global tier's remote, how many commits each side has that the other
    lacks (as of the last fetch), and the time of the last successful exchange."""
    from okfgit.flows import exchange

    ctx, ws = workspace()
    info = exchange.show(ws)
    if as_json:
        emit_json(info.to_json())
    else:
        click.echo("\n".join(info.render()))


@remote_cmd.command("set")
@click.argument("url")
def set_cmd(url: str) -> None:
    """Point the global tier at the git remote URL (added as `origin` unless the tier's
    branch already tracks another remote). The next `okfgit sync` exchanges with it:
    what the remote has is merged by concept, what the tier has is pushed."""
    from okfgit.verbs import remote

    ctx, ws = workspace()
    click.echo("\n".join(remote.set_url(ctx, ws, url).render()))


@remote_cmd.command("remove")
def remove_cmd() -> None:
    """Forget the global tier's remote: sync stops exchanging. Neither the tier nor the
    remote repository changes."""
    from okfgit.verbs import remote

    ctx, ws = workspace()
    click.echo(remote.remove(ctx, ws))
