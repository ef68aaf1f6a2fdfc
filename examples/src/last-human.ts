import { type BaseMessage, HumanMessage } from "@langchain/core/messages";

/** The text of the most recent human message ("" if there is none). */
export function lastHumanText(messages: BaseMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (HumanMessage.isInstance(message)) return message.text;
  }
  return "";
}
