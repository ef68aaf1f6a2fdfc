/** The agent's generative UI: components its graph pushes with `typedUi`, rendered by `useStream` clients. */
import "./ui.css";

function AnswerCard(props: { model: string; text: string }) {
  return (
    <div className="answer-card">
      <strong>{props.model}</strong>
      <p>{props.text}</p>
    </div>
  );
}

export default { "answer-card": AnswerCard };
