"""The hosted apps: loading them, their inputs, options, messages and versions, one lane per app."""
