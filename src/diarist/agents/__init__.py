"""Recall inside coding agents, through their hooks: on every prompt the memories that bear on it
arrive in the agent's context, at the start of a session what the user asked it to remember, and
at its end the transcripts are synced.

* ``protocols``: each agent's hook protocol (events, settings file, output), as its
  documentation says it;
* ``hook``: the command an agent runs (``python -m diarist.agents.hook AGENT EVENT``): standard
  library only until it has to work in-process;
* ``client``: the thin client of the resident process (``diarist.server.resident``);
* ``recall``: the same answers in-process, when no resident process is up;
* ``install``: ``diarist hooks install`` / ``uninstall``: the agent's settings file changed, and
  changed back exactly;
* ``paths``: where the socket, the keys the hooks use, the install records and the log live.
"""
