"""Serving vestige: the HTTP API (``vestige serve``), the MCP server (``vestige mcp``) and API keys.

Needs the ``server`` extra: ``pip install 'vestige[server]'``.
"""
