"""Probes: functions that read one part of the machine, each apart from its pure ``parse_*`` helpers.

Every probe takes a :class:`~cudadoctor.probes.context.ProbeContext` and returns its part of the
facts; :func:`cudadoctor.probes.collect.collect_facts` runs them all.
"""
