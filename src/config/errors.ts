/**
 * The one error type configuration loading throws. Its message is shown to the user as is (the CLI
 * prints it without a stack), so every message names where the bad value came from: the config file
 * and the field in it, the flag, or the environment variable.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
}
