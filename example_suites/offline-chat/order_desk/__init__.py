"""An order-status assistant that asks a chat-completions model: the offline-chat example's
application."""
