// Defaults of the shared server, apart from it so the command line shows them without loading it.

/** How long a state no connection uses stays open (`serve --shared --state-idle-ms`). */
export const DEFAULT_STATE_IDLE_MS = 5000;
