"""The commands, one module each.

Each gets arguments already checked and normalised (:func:`adaptable.cli.checks.check_args`)
and returns the command's exit status.
"""
