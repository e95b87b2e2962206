#!/bin/sh
# Context for the model: where the plugin lives (the variable smith sets)
# and where the hook runs (the project).
echo "plugin hook $1 ran: root=$CLAUDE_PLUGIN_ROOT cwd=$(pwd)"
