"""Serving diarist: the HTTP API (``diarist serve``), the MCP server (``diarist mcp``) and API keys.

Needs the ``server`` extra: ``pip install 'diarist[server]'``.
"""
