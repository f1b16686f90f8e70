"""``cudadoctor why``: start from the error a user has, name the check that finds its cause.

The error text is matched against the catalogue of compat/error_messages.toml (:mod:`.matching`), the checks
run as ``check`` runs them, and the answer is the problem finding among the message's causes
(:mod:`.decide`): why never names a cause that ``check`` does not report.
"""
